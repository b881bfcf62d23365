// SPDX-License-Identifier: Apache-2.0
#include "store/record_codec.h"

#include <cstring>

#include "common/binary_codec.h"
#include "timer/flow_key.h"

namespace tickwheel::server {
namespace {

constexpr std::uint8_t kFormat1 = 1;
constexpr std::uint8_t kFormat2 = 2;
constexpr std::uint8_t kFormat3 = 3;
constexpr std::uint8_t kFormat4 = 4;
constexpr std::uint16_t kMaxHeaders = 256;
static_assert(kFormat4 == kRecordFormat, "kRecordFormat names the newest format EncodeRecord writes");

bool HasTrace(const TimerRecord& r) { return !r.trace.traceparent.empty() || !r.trace.tracestate.empty(); }

// The fields formats 1 and 2 share, in their order.
bool ReadTimes(BinaryReader& in, TimerRecord& r) {
  return in.Fixed(r.fire_at_ms) && in.Fixed(r.due_ms) && in.Fixed(r.attempts) &&
         in.Fixed(r.max_attempts) && in.Fixed(r.backoff_ms) && in.Fixed(r.created_ms) &&
         in.Fixed(r.updated_ms);
}

bool ReadFormat1(BinaryReader& in, TimerRecord& r) {
  std::uint64_t std_hash = 0;  // std::hash of the body: not comparable
  if (!ReadTimes(in, r) || !in.Fixed(std_hash) || !in.String(r.target) ||
      !in.String(r.payload) || !in.String(r.last_error)) {
    return false;
  }
  r.digest_kind = DigestKind::kLegacy;
  r.digest = Digest{};
  r.flow = DefaultFlowKey(r.target);
  return true;
}

// Formats 2, 3 and 4: the same fields, format 3 with each attempt's
// throttled_ms and, last, the flow; format 4 with the trace context after
// it (never empty: a record without one is written as format 3).
bool ReadFormat2To4(BinaryReader& in, TimerRecord& r, std::uint8_t version) {
  std::uint8_t kind = 0;
  if (!ReadTimes(in, r) || !in.Fixed(kind) ||
      (kind != static_cast<std::uint8_t>(DigestKind::kSha256) &&
       kind != static_cast<std::uint8_t>(DigestKind::kLegacy))) {
    return false;
  }
  r.digest_kind = static_cast<DigestKind>(kind);
  for (std::uint8_t& b : r.digest) {
    if (!in.Fixed(b)) return false;
  }
  std::uint16_t headers = 0;
  if (!in.String(r.target) || !in.Fixed(headers) || headers > kMaxHeaders) return false;
  r.headers.resize(headers);
  for (auto& [name, value] : r.headers) {
    if (!in.String(name) || !in.String(value)) return false;
  }
  std::uint8_t logged = 0;
  if (!in.String(r.payload) || !in.String(r.last_error) || !in.Fixed(logged) ||
      logged > kMaxAttemptLog) {
    return false;
  }
  r.attempt_log.resize(logged);
  for (AttemptLog& a : r.attempt_log) {
    if (!in.Fixed(a.started_ms) || !in.Fixed(a.duration_ms) || !in.Fixed(a.status) ||
        !in.String(a.error)) {
      return false;
    }
    if (version >= kFormat3 && !in.Fixed(a.throttled_ms)) return false;
  }
  if (version < kFormat3) {
    r.flow = DefaultFlowKey(r.target);
    return true;
  }
  if (!in.String(r.flow) || r.flow.empty()) return false;
  if (version < kFormat4) return true;
  return in.String(r.trace.traceparent) && in.String(r.trace.tracestate) && HasTrace(r);
}

}  // namespace

std::string EncodeRecord(const TimerRecord& r) {
  std::string out;
  out.reserve(100 + r.target.size() + r.payload.size() + r.last_error.size() + r.flow.size() +
              r.trace.traceparent.size() + r.trace.tracestate.size());
  const bool traced = HasTrace(r);
  PutFixed(out, traced ? kFormat4 : kFormat3);
  PutFixed(out, static_cast<std::uint8_t>(r.state));
  PutFixed(out, r.fire_at_ms);
  PutFixed(out, r.due_ms);
  PutFixed(out, r.attempts);
  PutFixed(out, r.max_attempts);
  PutFixed(out, r.backoff_ms);
  PutFixed(out, r.created_ms);
  PutFixed(out, r.updated_ms);
  PutFixed(out, static_cast<std::uint8_t>(r.digest_kind));
  out.append(reinterpret_cast<const char*>(r.digest.data()), r.digest.size());
  PutString(out, r.target);
  PutFixed(out, static_cast<std::uint16_t>(r.headers.size()));
  for (const auto& [name, value] : r.headers) {
    PutString(out, name);
    PutString(out, value);
  }
  PutString(out, r.payload);
  PutString(out, r.last_error);
  PutFixed(out, static_cast<std::uint8_t>(r.attempt_log.size()));
  for (const AttemptLog& a : r.attempt_log) {
    PutFixed(out, a.started_ms);
    PutFixed(out, a.duration_ms);
    PutFixed(out, a.status);
    PutString(out, a.error);
    PutFixed(out, a.throttled_ms);
  }
  // Every record has a flow (NewTimer gives it one); one made without is
  // stored with its target's default rather than as unreadable.
  PutString(out, r.flow.empty() ? DefaultFlowKey(r.target) : r.flow);
  if (traced) {
    PutString(out, r.trace.traceparent);
    PutString(out, r.trace.tracestate);
  }
  return out;
}

Result<TimerRecord> DecodeRecord(std::string_view id, std::string_view bytes) {
  BinaryReader in(bytes);
  TimerRecord r;
  r.id = std::string(id);
  std::uint8_t version = 0;
  std::uint8_t state = 0;
  if (!in.Fixed(version)) {
    return Status::Corrupt("the record of timer \"" + r.id + "\" is empty");
  }
  if (version < kFormat1 || version > kFormat4) {
    return Status::Corrupt("the record of timer \"" + r.id + "\" has format " +
                           std::to_string(version) +
                           ", which this server does not know (written by a newer "
                           "tickwheel? upgrade this one); it is left untouched");
  }
  const bool read = in.Fixed(state) && state < kNumStates &&
                    (version == kFormat1 ? ReadFormat1(in, r) : ReadFormat2To4(in, r, version)) &&
                    in.done();
  if (!read) {
    return Status::Corrupt("the record of timer \"" + r.id +
                           "\" is damaged (format " + std::to_string(version) +
                           "); it is left untouched");
  }
  r.state = static_cast<TimerState>(state);
  return r;
}

}  // namespace tickwheel::server
