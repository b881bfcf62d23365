// SPDX-License-Identifier: Apache-2.0
#include "tickwheel/executors/less_executor.h"

#include "tickwheel/internal/argument_checks.h"

namespace tickwheel {

LessExecutor::LessExecutor(Duration threshold, LessExecutorOptions options)
    : threshold_ns_(
          internal::RequirePositive(threshold, "LessExecutor", "threshold")
              .count()),
      clock_(options.clock ? *options.clock : SystemClock::Instance()) {}

bool LessExecutor::Claim() {
  const std::int64_t now = clock_.Now().time_since_epoch().count();
  std::int64_t last = last_run_ns_.load(std::memory_order_relaxed);
  do {
    // A `now` before `last` (another thread read the clock later and won)
    // is within the threshold too.
    if (last != kNever && now - last < threshold_ns_) return false;
  } while (!last_run_ns_.compare_exchange_weak(
      last, now, std::memory_order_acq_rel, std::memory_order_relaxed));
  return true;
}

}  // namespace tickwheel
