// SPDX-License-Identifier: Apache-2.0
// A durable timer as the stores keep it. Its life (which field changes when)
// is in timer_state_machine.h; how RocksDB encodes it in store/record_codec.h.
#ifndef TICKWHEEL_SERVER_TIMER_TIMER_RECORD_H_
#define TICKWHEEL_SERVER_TIMER_TIMER_RECORD_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "timer/trace_context.h"

namespace tickwheel::server {

// The states of timer_state_machine.h. The numbers are stored: never reuse.
enum class TimerState : std::uint8_t {
  kPending = 0,     // waiting for its due time (first attempt or a retry)
  kDelivering = 1,  // an attempt is in flight
  kDelivered = 2,   // an attempt succeeded
  kFailed = 3,      // every attempt failed: a dead letter
  kCancelled = 4,   // cancelled while pending
};
inline constexpr int kNumStates = 5;

std::string_view StateName(TimerState state);
std::optional<TimerState> ParseState(std::string_view name);

// True for the states that keep a key in the due index (the scheduler's
// work): pending and delivering (a delivering timer found at start-up was in
// flight when the process died, and is fired again).
inline bool IsScheduled(TimerState s) {
  return s == TimerState::kPending || s == TimerState::kDelivering;
}

// How the create request is remembered, to tell a repeated create (same
// body: 200) from a different one with the same id (409).
enum class DigestKind : std::uint8_t {
  // SHA-256 of the request's canonical JSON (keys sorted, no spaces).
  kSha256 = 1,
  // A record stored before digests were stable (format 1): compared by
  // target, payload and retry, since its delay cannot be recovered.
  kLegacy = 2,
};
using Digest = std::array<std::uint8_t, 32>;

// One attempt, as GET shows it (the last kMaxAttemptLog are kept).
struct AttemptLog {
  std::int64_t started_ms = 0;
  std::uint32_t duration_ms = 0;
  std::int32_t status = 0;  // HTTP status; 0 when none was read (or NATS)
  std::string error;        // empty when it succeeded
  // How long it waited for its flow's limits before it started (rate,
  // in-flight cap, pause, a Retry-After hold): lateness that flow control
  // caused, not the server (docs/flows.md).
  std::uint32_t throttled_ms = 0;
  friend bool operator==(const AttemptLog&, const AttemptLog&) = default;
};
inline constexpr std::size_t kMaxAttemptLog = 10;

struct TimerRecord {
  std::string id;
  TimerState state = TimerState::kPending;
  std::int64_t fire_at_ms = 0;    // Unix ms the client asked for
  std::int64_t due_ms = 0;        // Unix ms of the next attempt (index key)
  std::uint32_t attempts = 0;     // attempts started so far
  std::uint32_t max_attempts = 1;
  std::uint32_t backoff_ms = 0;   // first retry delay; doubles per attempt
  std::int64_t created_ms = 0;
  std::int64_t updated_ms = 0;
  DigestKind digest_kind = DigestKind::kSha256;
  Digest digest{};                // of the create request
  std::string target;             // a webhook URL, or kNatsPrefix + subject
  // Its flow (timer/flow_key.h): the one the create named, else
  // DefaultFlowKey(target). Fixed for the timer's life.
  std::string flow;
  std::vector<std::pair<std::string, std::string>> headers;  // sent with each attempt
  std::string payload = "null";   // serialized JSON
  std::string last_error;         // of the last failed attempt
  std::vector<AttemptLog> attempt_log;  // oldest first, at most kMaxAttemptLog
  // The W3C trace context of its create (timer/trace_context.h; empty:
  // none): each attempt is sent as a new span under it. Fixed for the
  // timer's life.
  TraceContext trace;

  friend bool operator==(const TimerRecord&, const TimerRecord&) = default;
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_TIMER_TIMER_RECORD_H_
