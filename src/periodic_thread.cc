// SPDX-License-Identifier: Apache-2.0
#include "tickwheel/internal/periodic_thread.h"

#include <utility>

#include "tickwheel/internal/time_math.h"

namespace tickwheel::internal {

PeriodicThread::PeriodicThread(Clock& clock, Duration period,
                               std::function<void()> fn)
    : clock_(clock),
      period_(period),
      fn_(std::move(fn)),
      sleeper_(clock.NewSleeper()),
      thread_([this, first = AddSaturated(clock.Now(), period)] { Run(first); }) {}

PeriodicThread::~PeriodicThread() {
  {
    MutexLock lock(mutex_);
    stopping_ = true;
  }
  sleeper_->Wake();
  thread_.join();
}

void PeriodicThread::Run(TimePoint next) {
  for (;;) {
    std::uint64_t token;
    {
      MutexLock lock(mutex_);
      if (stopping_) return;
      token = sleeper_->token();
    }
    const TimePoint now = clock_.Now();
    if (now >= next) {
      fn_();
      next = NextTickAfter(next, now, period_);
      continue;
    }
    sleeper_->SleepUntil(next, token);
  }
}

}  // namespace tickwheel::internal
