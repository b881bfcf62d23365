# SPDX-License-Identifier: Apache-2.0
# tickwheel_server_library(<dir> SOURCES ... [DEPENDS <dir>...]
#                          [PUBLIC_LIBS ...] [PRIVATE_LIBS ...])
# A library of tickwheel serve: tickwheel_server_<dir>, made of the sources
# in server/<dir>/, linking the libraries of the directories it DEPENDS on.
# Its sources and headers may include headers of <dir> and of what it
# depends on (directly or not), nothing else: an include of another server
# directory stops the configuration, so the layering cannot drift.
set(TICKWHEEL_SERVER_DIRS api cli common delivery egress flow schedule scheduler serve store timer
    cluster transfer ui)

function(tickwheel_server_library dir)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPENDS;PUBLIC_LIBS;PRIVATE_LIBS" ${ARGN})
  set(target tickwheel_server_${dir})
  add_library(${target} STATIC ${ARG_SOURCES})
  target_include_directories(${target} PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
  target_compile_definitions(${target} PUBLIC BOOST_ASIO_NO_DEPRECATED)
  set(allowed ${dir})
  foreach(dep ${ARG_DEPENDS})
    target_link_libraries(${target} PUBLIC tickwheel_server_${dep})
    get_property(dep_allowed GLOBAL PROPERTY TICKWHEEL_SERVER_ALLOWED_${dep})
    list(APPEND allowed ${dep} ${dep_allowed})
  endforeach()
  list(REMOVE_DUPLICATES allowed)
  set_property(GLOBAL PROPERTY TICKWHEEL_SERVER_ALLOWED_${dir} ${allowed})
  target_link_libraries(${target} PUBLIC ${ARG_PUBLIC_LIBS} PRIVATE ${ARG_PRIVATE_LIBS})
  tickwheel_set_warnings(${target})

  file(GLOB files ${CMAKE_CURRENT_SOURCE_DIR}/${dir}/*.h ${CMAKE_CURRENT_SOURCE_DIR}/${dir}/*.cc)
  foreach(file ${files})
    file(STRINGS ${file} includes REGEX "^#include \"[a-z_]+/")
    foreach(line ${includes})
      string(REGEX REPLACE "^#include \"([a-z_]+)/.*" "\\1" included "${line}")
      if(included IN_LIST TICKWHEEL_SERVER_DIRS AND NOT included IN_LIST allowed)
        message(FATAL_ERROR
          "${file}: includes \"${included}/...\", but server/${dir} does not depend on "
          "server/${included} (server/CMakeLists.txt). Depend on it, if that is no cycle, "
          "or move what is shared into a directory both depend on.")
      endif()
    endforeach()
  endforeach()
endfunction()
