# SPDX-License-Identifier: Apache-2.0
# TICKWHEEL_BUILD_FUZZ builds the libFuzzer targets of tests/fuzz/ with clang:
# everything (the library too, so its branches guide the fuzzer) is
# instrumented for coverage, ASan and UBSan; the targets link libFuzzer.
# `make fuzz` and `make fuzz-test` drive them (docs/testing.md, Fuzzing).
if(TICKWHEEL_BUILD_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "TICKWHEEL_BUILD_FUZZ needs clang (libFuzzer): "
      "configure with -DCMAKE_CXX_COMPILER=clang++-14")
  endif()
  if(NOT TICKWHEEL_SANITIZE STREQUAL "")
    message(FATAL_ERROR
      "TICKWHEEL_BUILD_FUZZ brings its own sanitizers; leave TICKWHEEL_SANITIZE empty")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined
                      -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()

# tickwheel_add_fuzzer(name SOURCES ... [LIBS ...] [FLAGS ...])
# One libFuzzer executable, and a CTest test (label `fuzz`) that runs it
# through tests/fuzz/run.sh: the seeds of corpus/<name>/ and the kept
# inputs of regressions/<name>/ first, then fuzzing for FUZZ_SECONDS
# (environment; default 25). FLAGS are libFuzzer flags (-max_len, -timeout).
function(tickwheel_add_fuzzer name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS;FLAGS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS})
  target_link_options(${name} PRIVATE -fsanitize=fuzzer)
  tickwheel_set_warnings(${name})
  set(dir ${PROJECT_SOURCE_DIR}/tests/fuzz)
  set(dict)
  if(EXISTS ${dir}/dict/${name}.dict)
    set(dict -dict=${dir}/dict/${name}.dict)
  endif()
  add_test(NAME ${name}
    COMMAND ${dir}/run.sh $<TARGET_FILE:${name}> ${name} ${dir}
            ${PROJECT_BINARY_DIR} ${dict} ${ARG_FLAGS})
  set_tests_properties(${name} PROPERTIES LABELS fuzz)
endfunction()
