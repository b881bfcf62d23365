// SPDX-License-Identifier: Apache-2.0
#include "tickwheel/internal/report_error.h"

#include <cstdio>
#include <exception>

namespace tickwheel::internal {
namespace {

void WriteToStderr(const char* who, const char* what,
                   std::exception_ptr error) noexcept {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tickwheel::%s: %s: %s\n", who, what, e.what());
  } catch (...) {
    std::fprintf(stderr, "tickwheel::%s: %s: a non-standard exception\n", who,
                 what);
  }
}

}  // namespace

void ReportError(const char* who,
                 const std::function<void(std::exception_ptr)>& on_error,
                 std::exception_ptr error) noexcept {
  if (!on_error) {
    WriteToStderr(who, "user code threw", error);
    return;
  }
  try {
    on_error(error);
  } catch (...) {
    WriteToStderr(who, "the on_error handler threw", std::current_exception());
  }
}

}  // namespace tickwheel::internal
