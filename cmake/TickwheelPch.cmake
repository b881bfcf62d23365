# SPDX-License-Identifier: Apache-2.0
# Precompiled headers for the server's GCC builds (Release, server-asan,
# server-tsan). Most of the compile time of a server source is parsing
# Boost.Asio, Boost.Beast, Boost.JSON, spdlog and the standard library again
# (GCC with TSan on server/api/schedule_handlers.cc: 46-71% of it in
# "phase parsing"); a precompiled header parses them once per build.
#
#   tickwheel_precompile(SERVER <target>...)  the server's libraries and the
#       executable: one header for all of them, compiled with the first
#       target's flags and reused (REUSE_FROM) by the others
#   tickwheel_precompile(TEST <target>...)    the server's tests (with
#       GoogleTest), a header of their own: the sanitizer builds compile the
#       tests' files at -O0, and GCC uses a header only at the optimisation
#       level it was compiled at
#
# GCC uses a precompiled header only if every macro defined on the command
# line when it was compiled is defined the same way where it is used (more
# macros where it is used are fine); so each set's first target must have
# the fewest definitions (tickwheel_server_flow: the ones of Boost.JSON,
# spdlog and fmt, which each target of the set gets by linking
# tickwheel_pch_libs). -Winvalid-pch says so in the build's output
# wherever a header is not used (the source then parses it as text: right,
# only slower).
#
# On with -DTICKWHEEL_PCH=ON, which `make server-asan`, `make server-tsan`
# and `make server-tsan-test` pass (the Release build does not: it is also
# every developer's build, where ccache would miss the server's sources in
# any other build directory; docs/testing.md, How long it takes); never
# with clang (make tsa's -fsyntax-only writes no header; the fuzz and
# library sanitizer builds compile no Beast user). ccache: a precompiled
# header is not reproducible (two compiles of it differ), so the sources of
# a set hit the cache only in the build directory that compiled the
# header; ccache needs sloppiness=pch_defines,time_macros to cache them at
# all.
option(TICKWHEEL_PCH "Precompile the server's third-party headers (GCC builds)" OFF)
set(TICKWHEEL_PCH_ENABLED OFF)
if(TICKWHEEL_PCH AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND NOT TICKWHEEL_CHECK_ONLY
   AND NOT TICKWHEEL_BUILD_FUZZ)
  set(TICKWHEEL_PCH_ENABLED ON)
endif()

set(TICKWHEEL_PCH_HEADERS
  <boost/asio.hpp> <boost/asio/ssl.hpp> <boost/beast/core.hpp> <boost/beast/http.hpp>
  <boost/beast/ssl.hpp> <boost/json.hpp> <spdlog/spdlog.h>
  <chrono> <functional> <map> <memory> <optional> <string> <string_view> <vector>)

function(tickwheel_precompile kind)
  if(NOT TICKWHEEL_PCH_ENABLED)
    return()
  endif()
  if(NOT TARGET tickwheel_pch_libs)
    add_library(tickwheel_pch_libs INTERFACE)
    target_link_libraries(tickwheel_pch_libs INTERFACE
      Boost::headers Boost::json spdlog::spdlog OpenSSL::SSL)
  endif()
  get_property(owner GLOBAL PROPERTY TICKWHEEL_PCH_OWNER_${kind})
  foreach(target ${ARGN})
    target_link_libraries(${target} PRIVATE tickwheel_pch_libs)
    target_compile_options(${target} PRIVATE -Winvalid-pch)
    if(NOT owner)
      set(owner ${target})
      set_property(GLOBAL PROPERTY TICKWHEEL_PCH_OWNER_${kind} ${owner})
      if(kind STREQUAL "TEST")
        target_precompile_headers(${target} PRIVATE ${TICKWHEEL_PCH_HEADERS} <gtest/gtest.h>)
      else()
        target_precompile_headers(${target} PRIVATE ${TICKWHEEL_PCH_HEADERS})
      endif()
    else()
      target_precompile_headers(${target} REUSE_FROM ${owner})
    endif()
  endforeach()
endfunction()
