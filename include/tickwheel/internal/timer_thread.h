// SPDX-License-Identifier: Apache-2.0
// The thread that drives the wheels of TimingWheel and TimerService.
#ifndef TICKWHEEL_INTERNAL_TIMER_THREAD_H_
#define TICKWHEEL_INTERNAL_TIMER_THREAD_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <thread>

#include "tickwheel/clock.h"
#include "tickwheel/time.h"

namespace tickwheel::internal {

// TimerThread calls `advance(now)` whenever something may be due, and sleeps
// on the clock in between: until the earliest deadline `advance` returned,
// or until Notify says a new timer is due earlier. It never ticks through
// empty time.
//
// `advance` runs on the thread only. It must hand out what is due (it must
// not block on user code) and return the earliest pending deadline, or
// nullopt when nothing is pending.
//
// The wake-up protocol: while the thread runs `advance`, and while nothing
// is pending, every Notify wakes it; otherwise Notify wakes it only for a
// deadline before the one it sleeps until. The thread reads its sleeper's
// token before `advance` looks at the timers, so a timer added after that
// look always ends the sleep that follows.
//
// Thread safety: Notify may be called from any thread until Stop starts;
// the owner guarantees that (e.g. by calling Notify under a lock that Stop's
// caller takes first).
class TimerThread {
 public:
  using Advance = std::function<std::optional<TimePoint>(TimePoint now)>;

  TimerThread(Clock& clock, Advance advance);
  ~TimerThread();  // Stop()

  TimerThread(const TimerThread&) = delete;
  TimerThread& operator=(const TimerThread&) = delete;

  // Says that a timer due at `deadline` is now visible to `advance`.
  void Notify(TimePoint deadline) {
    if (deadline.time_since_epoch().count() <
        planned_ns_.load(std::memory_order_seq_cst)) {
      sleeper_->Wake();
    }
  }

  // Ends the thread and releases its sleeper (a ManualClock stops waiting
  // for it). Idempotent. REQUIRES: not called from `advance`.
  void Stop();

 private:
  static constexpr std::int64_t kWakeForAnything = INT64_MAX;

  void Run();

  Clock& clock_;
  const Advance advance_;
  std::unique_ptr<Sleeper> sleeper_;
  // The deadline the thread sleeps until, or kWakeForAnything.
  std::atomic<std::int64_t> planned_ns_{kWakeForAnything};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_INTERNAL_TIMER_THREAD_H_
