#include "store/timer_record.h"

#include <cstring>

namespace tickwheel::server {
namespace {

constexpr std::uint8_t kFormatVersion = 1;

template <typename T>
void PutFixed(std::string& out, T value) {
  char buf[sizeof(T)];
  std::memcpy(buf, &value, sizeof(T));
  out.append(buf, sizeof(T));
}

void PutString(std::string& out, std::string_view s) {
  PutFixed<std::uint32_t>(out, static_cast<std::uint32_t>(s.size()));
  out.append(s);
}

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  template <typename T>
  bool Fixed(T& value) {
    if (in_.size() < sizeof(T)) return false;
    std::memcpy(&value, in_.data(), sizeof(T));
    in_.remove_prefix(sizeof(T));
    return true;
  }
  bool String(std::string& s) {
    std::uint32_t n = 0;
    if (!Fixed(n) || in_.size() < n) return false;
    s.assign(in_.data(), n);
    in_.remove_prefix(n);
    return true;
  }
  bool done() const { return in_.empty(); }

 private:
  std::string_view in_;
};

constexpr std::string_view kStateNames[kNumStates] = {
    "pending", "delivering", "delivered", "failed", "cancelled"};

}  // namespace

std::string_view StateName(TimerState state) {
  return kStateNames[static_cast<int>(state)];
}

std::optional<TimerState> ParseState(std::string_view name) {
  for (int i = 0; i < kNumStates; ++i) {
    if (kStateNames[i] == name) return static_cast<TimerState>(i);
  }
  return std::nullopt;
}

std::string EncodeRecord(const TimerRecord& r) {
  std::string out;
  out.reserve(64 + r.url.size() + r.payload.size() + r.last_error.size());
  PutFixed(out, kFormatVersion);
  PutFixed(out, static_cast<std::uint8_t>(r.state));
  PutFixed(out, r.fire_at_ms);
  PutFixed(out, r.due_ms);
  PutFixed(out, r.attempts);
  PutFixed(out, r.max_attempts);
  PutFixed(out, r.backoff_ms);
  PutFixed(out, r.created_ms);
  PutFixed(out, r.updated_ms);
  PutFixed(out, r.request_hash);
  PutString(out, r.url);
  PutString(out, r.payload);
  PutString(out, r.last_error);
  return out;
}

std::optional<TimerRecord> DecodeRecord(std::string_view id,
                                        std::string_view bytes) {
  Reader in(bytes);
  TimerRecord r;
  r.id = std::string(id);
  std::uint8_t version = 0;
  std::uint8_t state = 0;
  if (!in.Fixed(version) || version != kFormatVersion) return std::nullopt;
  if (!in.Fixed(state) || state >= kNumStates) return std::nullopt;
  r.state = static_cast<TimerState>(state);
  if (!in.Fixed(r.fire_at_ms) || !in.Fixed(r.due_ms) || !in.Fixed(r.attempts) ||
      !in.Fixed(r.max_attempts) || !in.Fixed(r.backoff_ms) ||
      !in.Fixed(r.created_ms) || !in.Fixed(r.updated_ms) ||
      !in.Fixed(r.request_hash) || !in.String(r.url) || !in.String(r.payload) ||
      !in.String(r.last_error) || !in.done()) {
    return std::nullopt;
  }
  return r;
}

}  // namespace tickwheel::server
