// SPDX-License-Identifier: Apache-2.0
#include "tickwheel/timer_service.h"

#include <algorithm>
#include <exception>
#include <cstdint>
#include <functional>
#include <limits>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tickwheel/internal/argument_checks.h"
#include "tickwheel/internal/mutex.h"
#include "tickwheel/internal/report_error.h"
#include "tickwheel/internal/sharded_runtime.h"
#include "tickwheel/internal/time_math.h"
#include "tickwheel/internal/timer_shard.h"

namespace tickwheel {
namespace {

constexpr const char* kWho = "TimerService";

using internal::TimerShard;

}  // namespace

// Locking, ids, reporting and the workers' part; the state machine of each
// shard's timers is TimerShard's. Every callback it lets go is destroyed
// after the shard's lock is released.
class TimerService::Impl {
 public:
  explicit Impl(TimerServiceOptions options)
      : on_error_(options.on_error),
        runtime_(MakeConfig(options),
                 [this](TimerShard::Fired& fired) { Run(fired.id); }) {}

  TimerId Add(TimePoint deadline, Duration period, Callback& fn) {
    Shard& shard = runtime_.shard(HomeShard());
    internal::MutexLock lock(shard.mutex);
    if (shard.stopped) return TimerId();
    const TimerId id = shard.state.Add(deadline, period, fn);
    runtime_.Notify(deadline);
    return id;
  }

  bool Cancel(TimerId id) {
    if (!id.valid()) return false;
    Shard& shard = ShardOf(id);
    Callback dropped;  // destroyed after the unlock: it may call the service
    internal::MutexLock lock(shard.mutex);
    return !shard.stopped && shard.state.Cancel(id, dropped);
  }

  bool Reschedule(TimerId id, Duration delay) {
    if (!id.valid()) return false;
    Shard& shard = ShardOf(id);
    const TimePoint now = runtime_.clock().Now();
    // The wheel gets "at once" for delay <= 0; a repeat's phase restarts at
    // the real time of that run.
    const TimePoint deadline = internal::DeadlineAt(now, delay);
    const TimePoint run_at = delay > Duration::zero() ? deadline : now;
    internal::MutexLock lock(shard.mutex);
    if (shard.stopped || !shard.state.Reschedule(id, deadline, run_at)) {
      return false;
    }
    runtime_.Notify(deadline);
    return true;
  }

  std::size_t size() const {
    std::size_t total = 0;
    for (std::size_t s = 0; s < runtime_.shard_count(); ++s) {
      Shard& shard = runtime_.shard(s);
      internal::MutexLock lock(shard.mutex);
      if (!shard.stopped) total += shard.state.live();
    }
    return total;
  }

  void Stop() { runtime_.Stop(); }

  std::uint64_t callback_errors() const { return runtime_.callback_errors(); }

  TimePoint DeadlineAfter(Duration delay) const {
    return runtime_.DeadlineAfter(delay);
  }
  TimePoint Now() const { return runtime_.clock().Now(); }

 private:
  using Runtime = internal::ShardedRuntime<TimerShard, TimerShard::Fired>;
  using Shard = Runtime::Shard;

  static internal::RuntimeConfig MakeConfig(const TimerServiceOptions& options) {
    return {.who = kWho,
            .tick = options.tick,
            .tick_name = "tick",
            .shards = options.shards,
            .workers = internal::RequirePositive(options.workers, kWho, "workers"),
            .clock = options.clock,
            .on_error = options.on_error};
  }

  // The shard a thread adds to: its id's hash, so producers rarely meet.
  std::size_t HomeShard() const {
    thread_local const std::size_t hash =
        std::hash<std::thread::id>{}(std::this_thread::get_id());
    return runtime_.IndexFor(hash);
  }

  Shard& ShardOf(TimerId id) const {
    return runtime_.shard(TimerShard::ShardOf(id, runtime_.shard_count()));
  }

  // A worker runs the timer `id` names, if it is still queued. The
  // callback is destroyed here, after its run, under no lock; what it
  // throws goes to the pool, which counts and reports it. A repeat is
  // re-armed after its run, also when it threw.
  void Run(TimerId id) {
    Shard& shard = ShardOf(id);
    Callback fn;
    TimerShard::Start start;
    {
      internal::MutexLock lock(shard.mutex);
      if (shard.stopped) return;
      start = shard.state.TakeToRun(id, fn);
    }
    if (start == TimerShard::Start::kNothing) return;
    if (start == TimerShard::Start::kOnce) {
      fn();
      return;
    }
    std::exception_ptr error;
    try {
      fn();
    } catch (...) {
      error = std::current_exception();
    }
    FinishRun(shard, id, fn);
    if (error) std::rethrow_exception(error);
  }

  // After a repeat's run. Never throws: out of memory, the repeat is listed
  // for the timer thread to re-arm, which is woken for it, and the
  // failure is reported.
  void FinishRun(Shard& shard, TimerId id, Callback& fn) noexcept {
    const TimePoint now = runtime_.clock().Now();
    TimerShard::Finished finished;
    {
      internal::MutexLock lock(shard.mutex);
      if (shard.stopped) return;  // Stop discards the entries
      finished = shard.state.FinishRun(id, fn, now);
      if (finished.armed_at) runtime_.Notify(*finished.armed_at);
      if (finished.out_of_memory) runtime_.Notify(TimePoint::min());
    }
    if (finished.out_of_memory) {
      internal::ReportError(kWho, on_error_,
                            std::make_exception_ptr(std::bad_alloc()));
    }
  }

  const std::function<void(std::exception_ptr)> on_error_;
  Runtime runtime_;
};

TimerService::TimerService(TimerServiceOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}

TimerService::~TimerService() { Stop(); }

// `fn` dies with the caller's frame, after the shard's lock is released:
// also when Add fails or the service has stopped.
TimerId TimerService::After(Duration delay, Callback fn) {
  fn = internal::RequireCallable(std::move(fn), kWho, "fn");
  return impl_->Add(impl_->DeadlineAfter(delay), Duration::zero(), fn);
}

TimerId TimerService::At(TimePoint when, Callback fn) {
  fn = internal::RequireCallable(std::move(fn), kWho, "fn");
  return impl_->Add(when, Duration::zero(), fn);
}

TimerId TimerService::Every(Duration period, Callback fn) {
  internal::RequirePositive(period, kWho, "period");
  fn = internal::RequireCallable(std::move(fn), kWho, "fn");
  return impl_->Add(internal::DeadlineAt(impl_->Now(), period), period, fn);
}

bool TimerService::Cancel(TimerId id) { return impl_->Cancel(id); }

bool TimerService::Reschedule(TimerId id, Duration delay) {
  return impl_->Reschedule(id, delay);
}

std::size_t TimerService::size() const { return impl_->size(); }

std::uint64_t TimerService::callback_errors() const {
  return impl_->callback_errors();
}

void TimerService::Stop() { impl_->Stop(); }

}  // namespace tickwheel
