# SPDX-License-Identifier: Apache-2.0
# TICKWHEEL_SANITIZE instruments every target of the build (use clang).
if(TICKWHEEL_SANITIZE STREQUAL "address")
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
elseif(TICKWHEEL_SANITIZE STREQUAL "thread")
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
elseif(NOT TICKWHEEL_SANITIZE STREQUAL "")
  message(FATAL_ERROR
    "TICKWHEEL_SANITIZE must be 'address', 'thread' or empty, "
    "got '${TICKWHEEL_SANITIZE}'")
endif()
