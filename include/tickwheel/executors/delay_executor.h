// SPDX-License-Identifier: Apache-2.0
// DelayExecutor: runs a function once, a fixed delay after it is triggered,
// however many times it is triggered meanwhile.
#ifndef TICKWHEEL_EXECUTORS_DELAY_EXECUTOR_H_
#define TICKWHEEL_EXECUTORS_DELAY_EXECUTOR_H_

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <thread>

#include "tickwheel/clock.h"
#include "tickwheel/internal/mutex.h"
#include "tickwheel/internal/on_demand_thread.h"
#include "tickwheel/time.h"

namespace tickwheel {

struct DelayExecutorOptions {
  // nullptr means SystemClock::Instance(). Must outlive the executor.
  Clock* clock = nullptr;
  // Receives what `fn` throws, on the executor's thread. Empty: one line on
  // stderr. Either way later triggers still run `fn`, and callback_errors()
  // counts it.
  std::function<void(std::exception_ptr)> on_error = nullptr;
};

// DelayExecutor is go-zero's DelayExecutor: Trigger schedules one run of `fn`
// `delay` after the trigger; triggers while a run is pending are coalesced
// into it (the delay counts from the first of them). A trigger while `fn` is
// running schedules the next run, which starts `delay` after that trigger or
// when the current run ends, whichever is later: runs never overlap.
//
// A thread exists only while a run is pending or running. The destructor
// runs a pending run at once (no trigger is lost) and waits for it; triggers
// from then on (from `fn` itself) are ignored.
//
// Locks: `fn` and on_error run under no lock of the executor. Failures: a
// Trigger that cannot start the thread throws (std::system_error, or
// std::bad_alloc) with nothing pending, and the next Trigger works; what
// `fn` throws is counted (callback_errors) and goes to on_error.
//
// Thread safety: Trigger may be called from any thread, including from `fn`.
// Cost: Trigger is O(1) under a mutex; it starts a thread when none exists.
//
//   DelayExecutor save([&] { config.WriteToDisk(); }, 1s);
//   save.Trigger();  // many changes within a second: one write
class DelayExecutor {
 public:
  // Throws std::invalid_argument if `fn` is empty or `delay` is negative.
  DelayExecutor(std::function<void()> fn, Duration delay,
                DelayExecutorOptions options = {});
  // REQUIRES: not called from `fn`.
  ~DelayExecutor();

  DelayExecutor(const DelayExecutor&) = delete;
  DelayExecutor& operator=(const DelayExecutor&) = delete;

  // Schedules a run `delay` from now, unless one is already pending. Returns
  // true if this call scheduled it, false if it joined a pending one (or the
  // executor is being destroyed). May throw std::system_error or
  // std::bad_alloc if the thread cannot start (nothing is then pending).
  bool Trigger();

  // Runs of `fn` that threw, since construction; each is counted before it
  // is handed to on_error. Never throws.
  std::uint64_t callback_errors() const {
    return callback_errors_.load(std::memory_order_relaxed);
  }

 private:
  void Run() TW_EXCLUDES(mutex_);

  const std::function<void()> fn_;
  const Duration delay_;
  Clock& clock_;
  const std::function<void(std::exception_ptr)> on_error_;
  std::atomic<std::uint64_t> callback_errors_{0};  // runs of fn that threw

  internal::Mutex mutex_;
  bool pending_ TW_GUARDED_BY(mutex_) = false;  // a run is scheduled at due_
  TimePoint due_ TW_GUARDED_BY(mutex_);
  bool stopping_ TW_GUARDED_BY(mutex_) = false;
  internal::OnDemandThread thread_ TW_GUARDED_BY(mutex_);
};

}  // namespace tickwheel

#endif  // TICKWHEEL_EXECUTORS_DELAY_EXECUTOR_H_
