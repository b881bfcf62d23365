# install(EXPORT ...) so that users can find_package(tickwheel).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS tickwheel EXPORT tickwheelTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY include/tickwheel DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT tickwheelTargets
  NAMESPACE tickwheel::
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tickwheel)
configure_package_config_file(
  ${CMAKE_CURRENT_SOURCE_DIR}/cmake/tickwheelConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/tickwheelConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tickwheel)
write_basic_package_version_file(
  ${CMAKE_CURRENT_BINARY_DIR}/tickwheelConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${CMAKE_CURRENT_BINARY_DIR}/tickwheelConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/tickwheelConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tickwheel)
