// SPDX-License-Identifier: Apache-2.0
// The thread that drives the wheels of TimingWheel and TimerService.
#ifndef TICKWHEEL_INTERNAL_TIMER_THREAD_H_
#define TICKWHEEL_INTERNAL_TIMER_THREAD_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
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
// If `advance` throws (out of memory: it hands out what it can and throws
// after), the thread reports the exception to `failures.on_error` (empty:
// one line on stderr naming `failures.who`) and calls `advance` again
// `failures.retry_after` later, or sooner if Notify says so. It never ends
// on an exception.
//
// Thread safety: Notify may be called from any thread until Stop starts;
// the owner guarantees that (e.g. by calling Notify under a lock that Stop's
// caller takes first).
class TimerThread {
 public:
  using Advance = std::function<std::optional<TimePoint>(TimePoint now)>;
  struct Failures {
    const char* who = "TimerThread";  // static storage
    std::function<void(std::exception_ptr)> on_error;
    Duration retry_after = std::chrono::milliseconds(1);  // > 0
  };

  // Throws what starting a thread throws (std::system_error,
  // std::bad_alloc); nothing is left running then.
  TimerThread(Clock& clock, Advance advance, Failures failures);
  ~TimerThread();  // Stop()

  TimerThread(const TimerThread&) = delete;
  TimerThread& operator=(const TimerThread&) = delete;

  // Says that a timer due at `deadline` is now visible to `advance`.
  void Notify(TimePoint deadline) {
    const std::int64_t planned = planned_ns_.load(std::memory_order_seq_cst);
    // (A deadline of TimePoint::max() too wakes a thread with nothing
    // pending: on a ManualClock at the end of time it may be due.)
    if (planned == kWakeForAnything ||
        deadline.time_since_epoch().count() < planned) {
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
  const Failures failures_;
  std::unique_ptr<Sleeper> sleeper_;
  // The deadline the thread sleeps until, or kWakeForAnything.
  std::atomic<std::int64_t> planned_ns_{kWakeForAnything};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_INTERNAL_TIMER_THREAD_H_
