# SPDX-License-Identifier: Apache-2.0
# Test helpers shared by every directory that has tests.
find_package(GTest REQUIRED)
include(GoogleTest)

# tickwheel_add_test(name SOURCES ... [LIBS ...] [LABELS ...])
# One executable per concept; each GoogleTest case becomes a CTest test.
function(tickwheel_add_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS;LABELS;PROPERTIES" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE tickwheel::tickwheel GTest::gtest
                        GTest::gmock GTest::gtest_main ${ARG_LIBS})
  tickwheel_set_warnings(${name})
  if(NOT ARG_LABELS)
    set(ARG_LABELS unit)
  endif()
  gtest_discover_tests(${name}
    PROPERTIES LABELS "${ARG_LABELS}" ${ARG_PROPERTIES}
    DISCOVERY_TIMEOUT 60)
endfunction()

