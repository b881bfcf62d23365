# SPDX-License-Identifier: Apache-2.0
# Test helpers shared by every directory that has tests.
include_guard(GLOBAL)
find_package(GTest REQUIRED)
include(GoogleTest)

# main() of every test executable (tests/support/test_main.cc): a test that
# is skipped or disabled fails unless tests/allowed_skips.txt lists it and
# the variable its line names is set; a failed SetUpTestSuite fails its
# tests.
add_library(tickwheel_test_main STATIC ${PROJECT_SOURCE_DIR}/tests/support/test_main.cc)
target_link_libraries(tickwheel_test_main PUBLIC GTest::gtest)
target_compile_definitions(tickwheel_test_main PRIVATE
  TICKWHEEL_ALLOWED_SKIPS="${PROJECT_SOURCE_DIR}/tests/allowed_skips.txt")
tickwheel_set_warnings(tickwheel_test_main)

# tickwheel_add_test(name SOURCES ... [LIBS ...] [LABELS ...] [PROPERTIES ...])
# One executable per concept; each GoogleTest case becomes a CTest test.
# CTest runs DISABLED_ tests too (DISABLED FALSE), for the main above to
# fail them: a test that does not run is never reported as passing.
function(tickwheel_add_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS;LABELS;PROPERTIES" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE tickwheel::tickwheel tickwheel_test_main GTest::gtest
                        GTest::gmock ${ARG_LIBS})
  tickwheel_set_warnings(${name})
  if(NOT ARG_LABELS)
    set(ARG_LABELS unit)
  endif()
  gtest_discover_tests(${name}
    PROPERTIES LABELS "${ARG_LABELS}" DISABLED FALSE ${ARG_PROPERTIES}
    DISCOVERY_TIMEOUT 60)
endfunction()
