// SPDX-License-Identifier: Apache-2.0
#include "tickwheel/executors/delay_executor.h"

#include <utility>

#include "tickwheel/internal/argument_checks.h"
#include "tickwheel/internal/report_error.h"
#include "tickwheel/internal/time_math.h"

namespace tickwheel {
namespace {

constexpr const char* kName = "DelayExecutor";

}  // namespace

DelayExecutor::DelayExecutor(std::function<void()> fn, Duration delay,
                             DelayExecutorOptions options)
    : fn_(internal::RequireCallable(std::move(fn), kName, "fn")),
      delay_(internal::RequireNotNegative(delay, kName, "delay")),
      clock_(options.clock ? *options.clock : SystemClock::Instance()),
      on_error_(std::move(options.on_error)),
      thread_(clock_) {}

DelayExecutor::~DelayExecutor() {
  std::thread thread;
  {
    internal::MutexLock lock(mutex_);
    stopping_ = true;
    thread_.WakeLocked();
    thread = thread_.TakeLocked();
  }
  if (thread.joinable()) thread.join();
}

bool DelayExecutor::Trigger() {
  std::thread ended;
  {
    internal::MutexLock lock(mutex_);
    if (pending_ || stopping_) return false;
    pending_ = true;
    due_ = internal::AddSaturated(clock_.Now(), delay_);
    if (thread_.running()) {
      thread_.WakeLocked();  // it may be about to end; let it see pending_
      return true;
    }
    try {
      ended = thread_.StartLocked([this] { Run(); });
    } catch (...) {
      pending_ = false;
      throw;
    }
  }
  if (ended.joinable()) ended.join();
  return true;
}

void DelayExecutor::Run() {
  internal::MutexLock lock(mutex_);
  while (pending_) {
    if (stopping_ || clock_.Now() >= due_) {
      pending_ = false;  // a trigger from now on schedules the next run
      lock.Unlock();
      try {
        fn_();
      } catch (...) {
        callback_errors_.fetch_add(1, std::memory_order_relaxed);
        internal::ReportError(kName, on_error_, std::current_exception());
      }
      lock.Lock();
      continue;
    }
    Sleeper& sleeper = thread_.sleeper();
    const std::uint64_t token = sleeper.token();
    const TimePoint due = due_;
    lock.Unlock();
    sleeper.SleepUntil(due, token);
    lock.Lock();
  }
  thread_.EndedLocked();
}

}  // namespace tickwheel
