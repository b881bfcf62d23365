// SPDX-License-Identifier: Apache-2.0
// How the runtime reports an exception thrown by user code it ran (timer
// callbacks, executor batches).
#ifndef TICKWHEEL_INTERNAL_REPORT_ERROR_H_
#define TICKWHEEL_INTERNAL_REPORT_ERROR_H_

#include <exception>
#include <functional>

namespace tickwheel::internal {

// Hands `error` to `on_error`, or, when `on_error` is empty, writes one line
// naming `who` and the exception's what() to stderr. An exception thrown by
// `on_error` itself is written to stderr too; nothing escapes.
void ReportError(const char* who,
                 const std::function<void(std::exception_ptr)>& on_error,
                 std::exception_ptr error) noexcept;

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_INTERNAL_REPORT_ERROR_H_
