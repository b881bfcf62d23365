# SPDX-License-Identifier: Apache-2.0
# Installing `tickwheel` as a service, and the Debian package of it.
#
# `cmake --install build [--prefix P]` installs, besides the library, its
# headers and CMake config (TickwheelInstall.cmake): P/bin/tickwheel, the
# man page, the systemd unit P/lib/systemd/system/tickwheel.service (its
# ExecStart is P/bin/tickwheel, written at install time), the service's
# options file (/etc/default/tickwheel when P is /usr, P/etc/default
# otherwise), and the docs in P/share/doc/tickwheel.
#
# `make package` (cpack -G DEB in the build directory) makes
# tickwheel_VERSION_ARCH.deb of all of it, installed under /usr, with the
# runtime libraries as dependencies (dpkg-shlibdeps) and a postinst that
# creates the tickwheel system user; tests/package/ checks it (lintian,
# systemd-analyze verify, its contents).
set(TICKWHEEL_PACKAGING_DIR ${PROJECT_SOURCE_DIR}/packaging)
set(pkg_build ${PROJECT_BINARY_DIR}/packaging)
file(MAKE_DIRECTORY ${pkg_build})

# Compressed as Debian wants them (gzip -9n: no name, no time stamp).
configure_file(${TICKWHEEL_PACKAGING_DIR}/deb/changelog.in ${pkg_build}/changelog @ONLY)
set(pkg_gz
  ${pkg_build}/tickwheel.1.gz ${pkg_build}/changelog.gz ${pkg_build}/CHANGELOG.md.gz)
add_custom_command(
  OUTPUT ${pkg_gz}
  COMMAND gzip -9nc ${TICKWHEEL_PACKAGING_DIR}/tickwheel.1 > ${pkg_build}/tickwheel.1.gz
  COMMAND gzip -9nc ${pkg_build}/changelog > ${pkg_build}/changelog.gz
  COMMAND gzip -9nc ${PROJECT_SOURCE_DIR}/CHANGELOG.md > ${pkg_build}/CHANGELOG.md.gz
  DEPENDS ${TICKWHEEL_PACKAGING_DIR}/tickwheel.1 ${pkg_build}/changelog
          ${PROJECT_SOURCE_DIR}/CHANGELOG.md
  VERBATIM)
add_custom_target(tickwheel_package_files ALL DEPENDS ${pkg_gz})

install(FILES ${pkg_build}/tickwheel.1.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${pkg_build}/changelog.gz ${pkg_build}/CHANGELOG.md.gz
              ${TICKWHEEL_PACKAGING_DIR}/deb/copyright ${PROJECT_SOURCE_DIR}/README.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
# The unit and the options file depend on the prefix of the install, not
# of the configuration (cpack installs under /usr).
install(CODE "
  set(TICKWHEEL_BINARY \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}/tickwheel\")
  configure_file(\"${TICKWHEEL_PACKAGING_DIR}/tickwheel.service.in\"
                 \"${pkg_build}/installed/tickwheel.service\" @ONLY)
  file(INSTALL \"${pkg_build}/installed/tickwheel.service\"
       DESTINATION \"\${CMAKE_INSTALL_PREFIX}/lib/systemd/system\")
  if(CMAKE_INSTALL_PREFIX STREQUAL \"/usr\")
    set(tickwheel_etc /etc)
  else()
    set(tickwheel_etc \"\${CMAKE_INSTALL_PREFIX}/etc\")
  endif()
  file(INSTALL \"${TICKWHEEL_PACKAGING_DIR}/tickwheel.default\"
       DESTINATION \"\${tickwheel_etc}/default\" RENAME tickwheel)
")

# The Debian package.
file(WRITE ${pkg_build}/conffiles "/etc/default/tickwheel\n")
file(COPY ${TICKWHEEL_PACKAGING_DIR}/deb/postinst DESTINATION ${pkg_build}
     FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE
                      WORLD_READ WORLD_EXECUTE)
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME tickwheel)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "The tickwheel authors")
set(CPACK_PACKAGE_CONTACT "tickwheel maintainers <maintainers@tickwheel.example.org>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "durable timer server and C++ timing-wheel library")
# The long description (the synopsis is the summary above).
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
 "tickwheel serve keeps timers in an embedded RocksDB store (or a cluster of
nodes on one PostgreSQL) and delivers them as webhooks or NATS JetStream
messages when due, retried with backoff and kept as dead letters when every
attempt failed. The package holds the tickwheel executable with its
systemd unit, and the C++20 library (a hierarchical timing wheel, a keyed
TimingWheel, a TimerService, a TTL cache and batching executors) with its
headers and CMake package configuration.")
set(CPACK_DEBIAN_PACKAGE_SECTION misc)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${pkg_build}/postinst ${pkg_build}/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
# The install runs with DESTDIR and CMAKE_INSTALL_PREFIX=/usr, so that the
# unit's ExecStart and /etc/default are where the package puts them.
set(CPACK_SET_DESTDIR ON)
set(CPACK_INSTALL_PREFIX /usr)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ${CMAKE_INSTALL_BINDIR}/tickwheel)
set(CPACK_OUTPUT_FILE_PREFIX ${PROJECT_BINARY_DIR}/package)
include(CPack)
