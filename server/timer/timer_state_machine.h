// SPDX-License-Identifier: Apache-2.0
// The life of a durable timer: every state transition, in one place. Each is
// a pure function from the stored record to the next one (or to the Status
// that refuses it); the API and the dispatcher run them inside store
// mutations, so a transition and its check are one atomic step.
//
//                 claim                    2xx (Complete)
//   pending ──────────────────► delivering ─────────────► delivered
//    ▲ │ ▲  ◄──────────────────── │ │
//    │ │ │   error, attempts left │ │ error, no attempts left
//    │ │ └─ Reschedule (API)      │ └──────────────────► failed (dead letter)
//    │ │                          │                        │
//    │ └─ Cancel (API) ► cancelled└─ claim after a crash   │
//    │                              (recovered: same       │
//    └──────────────── Retry (API) ─ attempt again) ◄──────┘
//
// pending:     waiting for due_ms (the first attempt, or a retry)
// delivering:  an attempt is in flight; found at start-up, it was in flight
//              when the last process stopped: it is attempted again
// delivered, failed, cancelled: finished (failed can be retried)
#ifndef TICKWHEEL_SERVER_TIMER_TIMER_STATE_MACHINE_H_
#define TICKWHEEL_SERVER_TIMER_TIMER_STATE_MACHINE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "timer/timer_record.h"

namespace tickwheel::server {

// A validated create request (api/timer_request.h makes them).
struct TimerSpec {
  std::optional<std::string> id;  // absent: the server generates one
  std::int64_t fire_at_ms = 0;    // absolute; past times were clamped to now
  std::string target;             // see timer/target.h
  std::string flow;               // as named, else DefaultFlowKey(target)
  std::vector<std::pair<std::string, std::string>> headers;
  std::string payload = "null";   // serialized JSON
  std::uint32_t max_attempts = 1;
  std::uint32_t backoff_ms = 0;
  Digest digest{};                // SHA-256 of the request's canonical JSON
  // From the create's traceparent/tracestate headers: not part of the
  // body, so not of the digest (a repeated create under another span is
  // the same create, and the timer keeps the trace it was made in).
  TraceContext trace;
};

// create: a new pending timer.
TimerRecord NewTimer(const TimerSpec& spec, std::string id, std::int64_t now_ms);

// PATCH: pending -> pending at `fire_at_ms`. kConflict "not_pending" in any
// other state.
Result<TimerRecord> Reschedule(const TimerRecord& r, std::int64_t fire_at_ms,
                               std::int64_t now_ms);

// DELETE: pending -> cancelled. nullopt (nothing to write) if already
// cancelled; kConflict "not_pending" when delivering or finished.
Result<std::optional<TimerRecord>> Cancel(const TimerRecord& r, std::int64_t now_ms);

// POST :retry: failed -> pending now, with a fresh attempt count.
// kConflict "not_failed" in any other state.
Result<TimerRecord> Retry(const TimerRecord& r, std::int64_t now_ms);

enum class ClaimResult {
  kClaimed,    // pending -> delivering, attempts + 1
  kRecovered,  // delivering (in flight when a process stopped) -> delivering,
               // the same attempt made again: a possible duplicate
  kStale,      // no longer scheduled at `fired_due_ms`: nothing to do
  kNotYet,     // the wall clock has not reached due_ms (it was stepped back)
};
// The scheduler fired `r` for `fired_due_ms`. On kClaimed and kRecovered,
// `*next` is the record to write.
ClaimResult Claim(const TimerRecord& r, std::int64_t fired_due_ms,
                  std::int64_t now_ms, TimerRecord* next);

// What an attempt came to.
struct AttemptOutcome {
  bool delivered = false;
  AttemptLog log;                  // when, how long, status, error
  std::int64_t not_before_ms = 0;  // Retry-After: no retry before it (0: none)
};

// True if `r` is waiting for the outcome of attempt `attempt` (and not, say,
// cancelled meanwhile or already completed by another attempt).
inline bool AwaitsOutcome(const TimerRecord& r, std::uint32_t attempt) {
  return r.state == TimerState::kDelivering && r.attempts == attempt;
}

// The delay before the retry after `r.attempts` failed attempts:
// backoff_ms * 2^(attempts-1), capped at a day, times `jitter` (drawn from
// [0.5, 1.5) by the caller, so that failing receivers are not hit in waves).
std::int64_t RetryDelayMs(const TimerRecord& r, double jitter);

// REQUIRES: AwaitsOutcome(r, r.attempts). delivering -> delivered; or, after
// a failure, pending at max(now + retry_delay_ms, not_before_ms) while
// attempts < max_attempts, else failed. The attempt is logged either way.
TimerRecord Complete(const TimerRecord& r, const AttemptOutcome& outcome,
                     std::int64_t now_ms, std::int64_t retry_delay_ms);

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_TIMER_TIMER_STATE_MACHINE_H_
