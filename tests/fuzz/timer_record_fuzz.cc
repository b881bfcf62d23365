// SPDX-License-Identifier: Apache-2.0
// Fuzzes the embedded store's record codec (server/store/record_codec.h),
// which every read of the store goes through: a corrupt or truncated value
// must be refused, never half-read.
//
// The first input byte picks the mode:
// - even: the rest is an encoded record. DecodeRecord must not crash; it
//   refuses with kCorrupt and a message, or accepts: a format-3 or -4
//   record then re-encodes to exactly the same bytes (nothing ignored or
//   guessed; format 4 only with a trace context, format 3 only without), a
//   format-1 or -2 one survives its upgrade (Decode(Encode(r)) == r), a
//   format-1 one as a legacy digest, both with their target's default flow
//   and no trace context; the state is valid, the id the one given.
// - odd: the rest describes a record (any strings and numbers, any state
//   and digest kind, up to 16 headers and 10 logged attempts: what the API
//   and the state machine can make; a trace context or none).
//   DecodeRecord(EncodeRecord(r)) == r;
//   every strict prefix of the encoding, the encoding with a byte appended,
//   and with an unknown version byte, are refused. ParseState(StateName(s))
//   == s.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_source.h"
#include "store/record_codec.h"
#include "timer/flow_key.h"

namespace tickwheel::testing {
namespace {

using server::DecodeRecord;
using server::EncodeRecord;
using server::TimerRecord;
using server::TimerState;

void Require(bool ok, const std::string& what) {
  if (!ok) FuzzFail("timer record: " + what);
}

void RequireRefused(const server::Result<TimerRecord>& r, const std::string& what) {
  Require(!r.ok(), "accepted " + what);
  Require(r.status().code() == server::StatusCode::kCorrupt && !r.status().message().empty(),
          "refused " + what + " without kCorrupt and a message");
}

void DecodeAny(std::string_view id, std::string_view bytes) {
  const auto r = DecodeRecord(id, bytes);
  if (!r.ok()) {
    RequireRefused(r, "");
    return;
  }
  Require(static_cast<int>(r->state) < server::kNumStates, "accepted a bad state");
  Require(r->id == id, "id not taken as given");
  Require(server::ParseState(server::StateName(r->state)) == r->state,
          "state name does not parse back");
  Require(!r->flow.empty(), "accepted a record without a flow");
  const std::string again = EncodeRecord(*r);
  const bool traced = !r->trace.traceparent.empty() || !r->trace.tracestate.empty();
  if (bytes[0] == 3 || bytes[0] == 4) {
    Require(again == bytes, "accepted bytes that do not re-encode to themselves");
    Require(traced == (bytes[0] == 4), "a trace context in a format-3 record, or none in a format-4 one");
  } else {
    Require(!traced, "a trace context in a format-" + std::to_string(bytes[0]) + " record");
    Require(bytes[0] == 1 || bytes[0] == 2, "accepted format " + std::to_string(bytes[0]));
    Require(bytes[0] == 2 || r->digest_kind == server::DigestKind::kLegacy,
            "a format-1 record not legacy");
    Require(r->flow == server::DefaultFlowKey(r->target), "an old record's flow not its default");
    const auto upgraded = DecodeRecord(id, again);
    Require(upgraded.ok() && *upgraded == *r, "an old record changed in its upgrade");
  }
}

void RoundTrip(FuzzedDataProvider& in) {
  TimerRecord r;
  r.id = in.ConsumeRandomLengthString(200);
  r.state = static_cast<TimerState>(in.ConsumeIntegralInRange(0, server::kNumStates - 1));
  r.fire_at_ms = in.ConsumeIntegral<std::int64_t>();
  r.due_ms = in.ConsumeIntegral<std::int64_t>();
  r.attempts = in.ConsumeIntegral<std::uint32_t>();
  r.max_attempts = in.ConsumeIntegral<std::uint32_t>();
  r.backoff_ms = in.ConsumeIntegral<std::uint32_t>();
  r.created_ms = in.ConsumeIntegral<std::int64_t>();
  r.updated_ms = in.ConsumeIntegral<std::int64_t>();
  r.digest_kind =
      in.ConsumeBool() ? server::DigestKind::kSha256 : server::DigestKind::kLegacy;
  for (std::uint8_t& b : r.digest) b = in.ConsumeIntegral<std::uint8_t>();
  r.target = in.ConsumeRandomLengthString(3000);
  r.headers.resize(in.ConsumeIntegralInRange<std::size_t>(0, 16));
  for (auto& [name, value] : r.headers) {
    name = in.ConsumeRandomLengthString(64);
    value = in.ConsumeRandomLengthString(512);
  }
  r.payload = in.ConsumeRandomLengthString(70000);
  r.last_error = in.ConsumeRandomLengthString(1000);
  r.attempt_log.resize(in.ConsumeIntegralInRange<std::size_t>(0, server::kMaxAttemptLog));
  for (server::AttemptLog& a : r.attempt_log) {
    a.started_ms = in.ConsumeIntegral<std::int64_t>();
    a.duration_ms = in.ConsumeIntegral<std::uint32_t>();
    a.status = in.ConsumeIntegral<std::int32_t>();
    a.error = in.ConsumeRandomLengthString(300);
    a.throttled_ms = in.ConsumeIntegral<std::uint32_t>();
  }
  r.flow = in.ConsumeRandomLengthString(300);
  if (r.flow.empty()) r.flow = "f";  // every record has one (NewTimer, DecodeRecord)
  if (in.ConsumeBool()) {
    r.trace.traceparent = in.ConsumeRandomLengthString(80);
    r.trace.tracestate = in.ConsumeRandomLengthString(600);
  }

  const std::string bytes = EncodeRecord(r);
  const auto back = DecodeRecord(r.id, bytes);
  Require(back.ok() && *back == r, "DecodeRecord(EncodeRecord(r)) != r");
  Require(server::ParseState(server::StateName(r.state)) == r.state,
          "state name does not parse back");
  // Truncations: all of them for small records, else a spread of lengths.
  const std::size_t step = bytes.size() <= 512 ? 1 : bytes.size() / 251 + 1;
  for (std::size_t n = 0; n < bytes.size(); n += step) {
    RequireRefused(DecodeRecord(r.id, std::string_view(bytes).substr(0, n)),
                   "a truncation to " + std::to_string(n) + " of " +
                       std::to_string(bytes.size()) + " bytes");
  }
  RequireRefused(DecodeRecord(r.id, std::string_view(bytes).substr(0, bytes.size() - 1)),
                 "the encoding less its last byte");
  RequireRefused(DecodeRecord(r.id, bytes + '\0'), "trailing bytes");
  std::string other_version = bytes;
  other_version[0] = 5;
  RequireRefused(DecodeRecord(r.id, other_version), "an unknown format version");
}

}  // namespace
}  // namespace tickwheel::testing

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  if (data[0] % 2 == 0) {
    const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
    if (!bytes.empty()) tickwheel::testing::DecodeAny("some-id", bytes);
    // And the state names: only the five are accepted.
    if (const auto s = tickwheel::server::ParseState(bytes)) {
      if (tickwheel::server::StateName(*s) != bytes) {
        tickwheel::testing::FuzzFail("ParseState accepted a name that is not a state's");
      }
    }
  } else {
    FuzzedDataProvider in(data + 1, size - 1);
    tickwheel::testing::RoundTrip(in);
  }
  return 0;
}
