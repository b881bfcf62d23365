// SPDX-License-Identifier: Apache-2.0
#include "tickwheel/internal/timer_thread.h"

#include <utility>

#include "tickwheel/internal/report_error.h"
#include "tickwheel/internal/time_math.h"

namespace tickwheel::internal {

TimerThread::TimerThread(Clock& clock, Advance advance, Failures failures)
    : clock_(clock),
      advance_(std::move(advance)),
      failures_(std::move(failures)),
      sleeper_(clock.NewSleeper()),
      thread_([this] { Run(); }) {}

TimerThread::~TimerThread() { Stop(); }

void TimerThread::Stop() {
  if (!thread_.joinable()) return;
  stop_.store(true);
  sleeper_->Wake();
  thread_.join();
  sleeper_.reset();
}

void TimerThread::Run() {
  while (!stop_.load()) {
    planned_ns_.store(kWakeForAnything, std::memory_order_seq_cst);
    const std::uint64_t token = sleeper_->token();
    const TimePoint now = clock_.Now();
    std::optional<TimePoint> next;
    try {
      next = advance_(now);
    } catch (...) {
      ReportError(failures_.who, failures_.on_error, std::current_exception());
      next = AddSaturated(now, failures_.retry_after);
    }
    const TimePoint until = next.value_or(TimePoint::max());
    planned_ns_.store(next ? until.time_since_epoch().count()
                           : kWakeForAnything,
                      std::memory_order_seq_cst);
    if (stop_.load()) break;
    sleeper_->SleepUntil(until, token);
  }
}

}  // namespace tickwheel::internal
