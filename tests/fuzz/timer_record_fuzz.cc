// Fuzzes the store's record encoding (server/store/timer_record.h), which
// every read of the store goes through: a corrupt or truncated value must be
// refused, never half-read.
//
// The first input byte picks the mode:
// - even: the rest is an encoded record. DecodeRecord must not crash, and
//   what it accepts must re-encode to exactly the same bytes (so nothing is
//   ignored or guessed), with a valid state and the id it was given.
// - odd: the rest describes a record (any strings, any numbers, any state).
//   DecodeRecord(EncodeRecord(r)) == r; every strict prefix of the encoding,
//   the encoding with a byte appended, and with another version byte, are
//   refused. ParseState(StateName(s)) == s.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_source.h"
#include "store/timer_record.h"

namespace tickwheel::testing {
namespace {

using server::DecodeRecord;
using server::EncodeRecord;
using server::TimerRecord;
using server::TimerState;

bool Same(const TimerRecord& a, const TimerRecord& b) {
  return a.id == b.id && a.state == b.state && a.fire_at_ms == b.fire_at_ms &&
         a.due_ms == b.due_ms && a.attempts == b.attempts &&
         a.max_attempts == b.max_attempts && a.backoff_ms == b.backoff_ms &&
         a.created_ms == b.created_ms && a.updated_ms == b.updated_ms &&
         a.request_hash == b.request_hash && a.url == b.url &&
         a.payload == b.payload && a.last_error == b.last_error;
}

void Require(bool ok, const std::string& what) {
  if (!ok) FuzzFail("timer record: " + what);
}

void DecodeAny(std::string_view id, std::string_view bytes) {
  const auto r = DecodeRecord(id, bytes);
  if (!r) return;
  Require(static_cast<int>(r->state) < server::kNumStates, "accepted a bad state");
  Require(r->id == id, "id not taken as given");
  Require(EncodeRecord(*r) == bytes, "accepted bytes that do not re-encode to themselves");
  Require(server::ParseState(server::StateName(r->state)) == r->state,
          "state name does not parse back");
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
  r.request_hash = in.ConsumeIntegral<std::uint64_t>();
  r.url = in.ConsumeRandomLengthString(3000);
  r.payload = in.ConsumeRandomLengthString(70000);
  r.last_error = in.ConsumeRemainingBytesAsString();

  const std::string bytes = EncodeRecord(r);
  const auto back = DecodeRecord(r.id, bytes);
  Require(back && Same(*back, r), "DecodeRecord(EncodeRecord(r)) != r");
  Require(server::ParseState(server::StateName(r.state)) == r.state,
          "state name does not parse back");
  // Truncations: all of them for small records, else a spread of lengths.
  const std::size_t step = bytes.size() <= 512 ? 1 : bytes.size() / 251 + 1;
  for (std::size_t n = 0; n < bytes.size(); n += step) {
    Require(!DecodeRecord(r.id, std::string_view(bytes).substr(0, n)),
            "accepted a truncation to " + std::to_string(n) + " of " +
                std::to_string(bytes.size()) + " bytes");
  }
  Require(!DecodeRecord(r.id, std::string_view(bytes).substr(0, bytes.size() - 1)),
          "accepted the encoding less its last byte");
  Require(!DecodeRecord(r.id, bytes + '\0'), "accepted trailing bytes");
  std::string other_version = bytes;
  other_version[0] = static_cast<char>(other_version[0] + 1);
  Require(!DecodeRecord(r.id, other_version), "accepted another format version");
}

}  // namespace
}  // namespace tickwheel::testing

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  if (data[0] % 2 == 0) {
    const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
    tickwheel::testing::DecodeAny("some-id", bytes);
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
