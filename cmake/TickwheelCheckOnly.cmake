# SPDX-License-Identifier: Apache-2.0
# TICKWHEEL_CHECK_ONLY: a build for the compiler's diagnostics alone (make tsa:
# clang's -Wthread-safety on the server). Each source is compiled with
# -fsyntax-only, which runs the whole front end (templates instantiated,
# annotations checked, every warning) but generates no code; the object,
# library and executable files are left empty so that ninja keeps track of
# what is up to date. Nothing a check-only build produces can be run.
# Measured on server/api/http_server.cc with clang 14: 12.7 s against 21.8 s
# for -O0 code generation.
option(TICKWHEEL_CHECK_ONLY
       "Check the sources (-fsyntax-only) without generating code or linking"
       OFF)
if(TICKWHEEL_CHECK_ONLY)
  set(CMAKE_CXX_COMPILE_OBJECT
      "<CMAKE_CXX_COMPILER> <DEFINES> <INCLUDES> <FLAGS> -fsyntax-only <SOURCE> && ${CMAKE_COMMAND} -E touch <OBJECT>")
  set(CMAKE_CXX_CREATE_STATIC_LIBRARY "${CMAKE_COMMAND} -E touch <TARGET>")
  set(CMAKE_CXX_LINK_EXECUTABLE "${CMAKE_COMMAND} -E touch <TARGET>")
  # ccache cannot cache a check that writes no object; ninja's own
  # up-to-date tracking (the depfiles are still written) does the job.
  set(TICKWHEEL_CCACHE OFF CACHE BOOL "" FORCE)
endif()
