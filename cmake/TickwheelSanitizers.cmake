# SPDX-License-Identifier: Apache-2.0
# TICKWHEEL_SANITIZE instruments every target of the build (use clang).
# TICKWHEEL_UBSAN_SKIP: UBSan checks an address build leaves out
# (comma-separated, as -fno-sanitize= takes them; the Makefile's
# server-asan says which and why). It follows -fsanitize=undefined on the
# command line: before it, GCC would turn them back on.
set(TICKWHEEL_UBSAN_SKIP "" CACHE STRING "UBSan checks left out of TICKWHEEL_SANITIZE=address")
if(TICKWHEEL_SANITIZE STREQUAL "address")
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined)
  if(TICKWHEEL_UBSAN_SKIP)
    add_compile_options(-fno-sanitize=${TICKWHEEL_UBSAN_SKIP})
  endif()
  add_link_options(-fsanitize=address,undefined)
elseif(TICKWHEEL_SANITIZE STREQUAL "thread")
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
elseif(NOT TICKWHEEL_SANITIZE STREQUAL "")
  message(FATAL_ERROR
    "TICKWHEEL_SANITIZE must be 'address', 'thread' or empty, "
    "got '${TICKWHEEL_SANITIZE}'")
endif()
