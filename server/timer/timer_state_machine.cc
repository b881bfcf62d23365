// SPDX-License-Identifier: Apache-2.0
#include "timer/timer_state_machine.h"

#include <algorithm>
#include <cmath>

namespace tickwheel::server {
namespace {

std::string StateConflictMessage(TimerState s) {
  switch (s) {
    case TimerState::kDelivering: return "the timer is being delivered";
    case TimerState::kDelivered: return "the timer was already delivered";
    case TimerState::kFailed: return "the timer failed (a dead letter; POST :retry re-arms it)";
    case TimerState::kCancelled: return "the timer was cancelled";
    case TimerState::kPending: return "the timer is pending";
  }
  return "";
}

Status StateConflict(TimerState state, const char* reason, const char* only) {
  return Status::Conflict(reason, StateConflictMessage(state) + "; only " + only, "id");
}

}  // namespace

TimerRecord NewTimer(const TimerSpec& spec, std::string id, std::int64_t now_ms) {
  TimerRecord r;
  r.id = std::move(id);
  r.state = TimerState::kPending;
  r.fire_at_ms = spec.fire_at_ms;
  r.due_ms = spec.fire_at_ms;
  r.max_attempts = spec.max_attempts;
  r.backoff_ms = spec.backoff_ms;
  r.created_ms = now_ms;
  r.updated_ms = now_ms;
  r.digest_kind = DigestKind::kSha256;
  r.digest = spec.digest;
  r.target = spec.target;
  r.flow = spec.flow;
  r.headers = spec.headers;
  r.payload = spec.payload;
  r.trace = spec.trace;
  return r;
}

Result<TimerRecord> Reschedule(const TimerRecord& r, std::int64_t fire_at_ms,
                               std::int64_t now_ms) {
  if (r.state != TimerState::kPending) {
    return StateConflict(r.state, "not_pending", "pending timers can be rescheduled");
  }
  TimerRecord next = r;
  next.fire_at_ms = fire_at_ms;
  next.due_ms = fire_at_ms;
  next.updated_ms = now_ms;
  return next;
}

Result<std::optional<TimerRecord>> Cancel(const TimerRecord& r, std::int64_t now_ms) {
  if (r.state == TimerState::kCancelled) return std::optional<TimerRecord>();
  if (r.state != TimerState::kPending) {
    return StateConflict(r.state, "not_pending", "pending timers can be cancelled");
  }
  TimerRecord next = r;
  next.state = TimerState::kCancelled;
  next.updated_ms = now_ms;
  return std::optional<TimerRecord>(std::move(next));
}

Result<TimerRecord> Retry(const TimerRecord& r, std::int64_t now_ms) {
  if (r.state != TimerState::kFailed) {
    return StateConflict(r.state, "not_failed", "failed timers (dead letters) can be retried");
  }
  TimerRecord next = r;
  next.state = TimerState::kPending;
  next.attempts = 0;
  next.due_ms = now_ms;
  next.updated_ms = now_ms;
  return next;
}

ClaimResult Claim(const TimerRecord& r, std::int64_t fired_due_ms,
                  std::int64_t now_ms, TimerRecord* next) {
  if (!IsScheduled(r.state) || r.due_ms != fired_due_ms) return ClaimResult::kStale;
  if (now_ms < r.due_ms) return ClaimResult::kNotYet;
  *next = r;
  next->updated_ms = now_ms;
  if (r.state == TimerState::kDelivering) {
    // Its outcome was never written: make that attempt again (the count
    // stays, so a timer never exceeds max_attempts by being recovered).
    return ClaimResult::kRecovered;
  }
  next->state = TimerState::kDelivering;
  next->attempts += 1;
  return ClaimResult::kClaimed;
}

std::int64_t RetryDelayMs(const TimerRecord& r, double jitter) {
  constexpr double kDayMs = 24.0 * 3600 * 1000;
  const double base = static_cast<double>(std::max<std::uint32_t>(r.backoff_ms, 1));
  const int doublings = static_cast<int>(std::min<std::uint32_t>(
      r.attempts > 0 ? r.attempts - 1 : 0, 40));
  const double delay = std::min(std::ldexp(base, doublings), kDayMs);
  return static_cast<std::int64_t>(delay * jitter);
}

TimerRecord Complete(const TimerRecord& r, const AttemptOutcome& outcome,
                     std::int64_t now_ms, std::int64_t retry_delay_ms) {
  TimerRecord next = r;
  next.updated_ms = now_ms;
  next.attempt_log.push_back(outcome.log);
  if (next.attempt_log.size() > kMaxAttemptLog) {
    next.attempt_log.erase(next.attempt_log.begin(),
                           next.attempt_log.end() - static_cast<std::ptrdiff_t>(kMaxAttemptLog));
  }
  if (outcome.delivered) {
    next.state = TimerState::kDelivered;
    next.last_error.clear();
  } else if (next.attempts < next.max_attempts) {
    next.state = TimerState::kPending;
    next.due_ms = std::max(now_ms + retry_delay_ms, outcome.not_before_ms);
    next.last_error = outcome.log.error;
  } else {
    next.state = TimerState::kFailed;
    next.last_error = outcome.log.error;
  }
  return next;
}

}  // namespace tickwheel::server
