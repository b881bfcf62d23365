// A durable timer as the store keeps it, and its binary encoding.
#ifndef TICKWHEEL_SERVER_STORE_TIMER_RECORD_H_
#define TICKWHEEL_SERVER_STORE_TIMER_RECORD_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tickwheel::server {

// pending -> delivering -> delivered | (pending again for a retry) | failed;
// pending -> cancelled; failed -> pending (POST :retry).
enum class TimerState : std::uint8_t {
  kPending = 0,
  kDelivering = 1,
  kDelivered = 2,
  kFailed = 3,
  kCancelled = 4,
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

struct TimerRecord {
  std::string id;
  TimerState state = TimerState::kPending;
  std::int64_t fire_at_ms = 0;  // Unix ms the client asked for
  std::int64_t due_ms = 0;      // Unix ms of the next attempt (index key)
  std::uint32_t attempts = 0;   // attempts started so far
  std::uint32_t max_attempts = 1;
  std::uint32_t backoff_ms = 0;  // first retry delay; doubles per attempt
  std::int64_t created_ms = 0;
  std::int64_t updated_ms = 0;
  std::uint64_t request_hash = 0;  // of the create body, for idempotency
  std::string url;                 // webhook target
  std::string payload;             // serialized JSON value
  std::string last_error;          // of the last failed attempt
};

// A compact, versioned binary form. Decode returns nullopt for bytes that
// are not an encoded record (corruption, or a newer format).
std::string EncodeRecord(const TimerRecord& record);
std::optional<TimerRecord> DecodeRecord(std::string_view id,
                                        std::string_view bytes);

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_STORE_TIMER_RECORD_H_
