// SPDX-License-Identifier: Apache-2.0
// LessExecutor: runs a function at most once per threshold, discarding the
// calls in between.
#ifndef TICKWHEEL_EXECUTORS_LESS_EXECUTOR_H_
#define TICKWHEEL_EXECUTORS_LESS_EXECUTOR_H_

#include <atomic>
#include <cstdint>
#include <limits>
#include <utility>

#include "tickwheel/clock.h"
#include "tickwheel/time.h"

namespace tickwheel {

struct LessExecutorOptions {
  // nullptr means SystemClock::Instance(). Must outlive the executor.
  Clock* clock = nullptr;
};

// LessExecutor is go-zero's LessExecutor made atomic: DoOrDiscard runs `fn`
// (on the caller's thread) if no call ran one within the last `threshold`,
// and otherwise discards it. The check and the claim are one compare-and-swap,
// so of many threads calling at once exactly one runs `fn` (go-zero's
// check-then-set lets several through). The threshold counts from the start
// of the previous run; a slow `fn` may still be running when the next starts.
//
// Thread safety: DoOrDiscard may be called from any thread.
// Cost: one clock read and one compare-and-swap; no lock, no allocation.
//
//   LessExecutor log_once_a_minute(std::chrono::minutes(1));
//   log_once_a_minute.DoOrDiscard([&] { Log("queue full, dropping"); });
class LessExecutor {
 public:
  // Throws std::invalid_argument if `threshold` is not positive.
  explicit LessExecutor(Duration threshold, LessExecutorOptions options = {});

  LessExecutor(const LessExecutor&) = delete;
  LessExecutor& operator=(const LessExecutor&) = delete;

  // Runs fn() and returns true if no run started within the last threshold;
  // returns false without running it otherwise. The first call always runs.
  // What fn throws propagates to the caller; the run still counts.
  template <typename F>
  bool DoOrDiscard(F&& fn) {
    if (!Claim()) return false;
    std::forward<F>(fn)();
    return true;
  }

 private:
  static constexpr std::int64_t kNever =
      std::numeric_limits<std::int64_t>::min();

  // Claims the right to run now, atomically.
  bool Claim();

  const std::int64_t threshold_ns_;
  Clock& clock_;
  std::atomic<std::int64_t> last_run_ns_{kNever};
};

}  // namespace tickwheel

#endif  // TICKWHEEL_EXECUTORS_LESS_EXECUTOR_H_
