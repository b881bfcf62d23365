// SPDX-License-Identifier: Apache-2.0
// A thread that calls a function at a fixed rate on a Clock.
#ifndef TICKWHEEL_INTERNAL_PERIODIC_THREAD_H_
#define TICKWHEEL_INTERNAL_PERIODIC_THREAD_H_

#include <functional>
#include <memory>
#include <thread>

#include "tickwheel/clock.h"
#include "tickwheel/internal/mutex.h"
#include "tickwheel/time.h"

namespace tickwheel::internal {

// PeriodicThread calls `fn` at start + period, start + 2 * period, ... (fixed
// rate; periods missed while `fn` ran are skipped, not bursted) until it is
// destroyed. Its Sleeper lives as long as it does, so a ManualClock's
// Advance returns after the due calls of `fn` have returned.
//
// Thread safety: construction and destruction on one thread; `fn` runs on
// the periodic thread, never concurrently with itself. An exception from
// `fn` ends the process (std::terminate): `fn` must not throw.
class PeriodicThread {
 public:
  // REQUIRES: period > 0; `clock` outlives this.
  PeriodicThread(Clock& clock, Duration period, std::function<void()> fn);
  // Stops and joins; a call of `fn` in progress finishes first.
  // REQUIRES: not called from `fn`.
  ~PeriodicThread();

  PeriodicThread(const PeriodicThread&) = delete;
  PeriodicThread& operator=(const PeriodicThread&) = delete;

 private:
  void Run(TimePoint next) TW_EXCLUDES(mutex_);

  Clock& clock_;
  const Duration period_;
  const std::function<void()> fn_;
  const std::unique_ptr<Sleeper> sleeper_;
  Mutex mutex_;
  bool stopping_ TW_GUARDED_BY(mutex_) = false;
  std::thread thread_;     // last: starts once the rest exists
};

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_INTERNAL_PERIODIC_THREAD_H_
