# SPDX-License-Identifier: Apache-2.0
# install(EXPORT ...) so that users can find_package(tickwheel).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS tickwheel EXPORT tickwheelTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
# The public headers, listed one by one so that nothing else under include/
# (an editor's or a merge's leftovers) reaches users. A file there that is not
# listed stops the configuration.
set(TICKWHEEL_PUBLIC_HEADERS
  include/tickwheel/cache.h
  include/tickwheel/clock.h
  include/tickwheel/executors/bulk_executor.h
  include/tickwheel/executors/chunk_executor.h
  include/tickwheel/executors/delay_executor.h
  include/tickwheel/executors/less_executor.h
  include/tickwheel/executors/periodical_executor.h
  include/tickwheel/internal/argument_checks.h
  include/tickwheel/internal/batch_flusher.h
  include/tickwheel/internal/batch_job.h
  include/tickwheel/internal/flat_map.h
  include/tickwheel/internal/huge_pages.h
  include/tickwheel/internal/keyed_shard.h
  include/tickwheel/internal/lru_list.h
  include/tickwheel/internal/mutex.h
  include/tickwheel/internal/on_demand_thread.h
  include/tickwheel/internal/periodic_thread.h
  include/tickwheel/internal/prefetch.h
  include/tickwheel/internal/report_error.h
  include/tickwheel/internal/sharded_runtime.h
  include/tickwheel/internal/tick_divider.h
  include/tickwheel/internal/time_math.h
  include/tickwheel/internal/timer_shard.h
  include/tickwheel/internal/timer_thread.h
  include/tickwheel/internal/wheel_impl.h
  include/tickwheel/internal/worker_pool.h
  include/tickwheel/time.h
  include/tickwheel/timer_id.h
  include/tickwheel/timer_service.h
  include/tickwheel/timing_wheel.h
  include/tickwheel/wheel.h
)
# The client's (src/client/CMakeLists.txt), installed with it: built with
# the server (TICKWHEEL_BUILD_SERVER, which needs Boost and OpenSSL).
set(TICKWHEEL_CLIENT_HEADERS
  include/tickwheel/client.h
  include/tickwheel/webhook.h
)
file(GLOB_RECURSE tickwheel_include_files RELATIVE ${PROJECT_SOURCE_DIR}
     ${PROJECT_SOURCE_DIR}/include/*)
foreach(f ${tickwheel_include_files})
  if(NOT f IN_LIST TICKWHEEL_PUBLIC_HEADERS AND NOT f IN_LIST TICKWHEEL_CLIENT_HEADERS)
    message(FATAL_ERROR "${f} is not in TICKWHEEL_PUBLIC_HEADERS or TICKWHEEL_CLIENT_HEADERS "
                        "(cmake/TickwheelInstall.cmake): list it, or remove it")
  endif()
endforeach()
set(tickwheel_installed_headers ${TICKWHEEL_PUBLIC_HEADERS})
if(TICKWHEEL_BUILD_SERVER)
  list(APPEND tickwheel_installed_headers ${TICKWHEEL_CLIENT_HEADERS})
endif()
foreach(header ${tickwheel_installed_headers})
  get_filename_component(dir ${header} DIRECTORY)
  string(REGEX REPLACE "^include/?" "" dir "${dir}")
  install(FILES ${header} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/${dir})
endforeach()
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
