# SPDX-License-Identifier: Apache-2.0
# Warnings apply to tickwheel's own targets only, never to its users.
function(tickwheel_set_warnings target)
  target_compile_options(${target} PRIVATE
    -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion
    # GCC 12 warns on designated initializers that rely on defaults.
    -Wno-missing-field-initializers)
  # Clang checks the lock annotations (include/tickwheel/internal/mutex.h).
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    target_compile_options(${target} PRIVATE -Wthread-safety -Werror=thread-safety)
  endif()
endfunction()
