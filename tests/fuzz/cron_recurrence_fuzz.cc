// SPDX-License-Identifier: Apache-2.0
// Fuzzes the cron parser and Recurrence::NextAfter (server/schedule/).
//
// Input: the cron expression, then optionally a NUL byte and parameters:
// byte 0 picks the zone (of kZones), byte 1 the policies (bit 0: skip,
// bit 1: both) and whether the start is taken raw (bit 2: any int64 ms;
// otherwise 1990-2100), then 8 bytes (little-endian) of the start.
//
// Oracle:
//  - Compile never crashes; a refusal is kInvalidArgument with field
//    "cron" and a message that names a cron field or the expression.
//  - What compiles: next = NextAfter(start) is a whole second strictly
//    after start; the zone's reading of next matches the expression field
//    by field (CronSearch::Matches), or next is the end of a DST gap with
//    "shift" and a reading inside that gap matches; NextAfter(next - 1) is
//    next again; Describe(next) reads back the same instant's offset.
//  - Nothing is skipped: second by second over the 30 minutes after start
//    (the first start; the next two steps check the properties above),
//    with only the zone's offsets and Matches, no instant before next (nor
//    any, when there is no next) should have fired by the DST policies (the
//    same brute force as cron_recurrence_test).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "fuzz_source.h"
#include "schedule/cron_expression.h"
#include "schedule/cron_search.h"
#include "schedule/recurrence.h"
#include "schedule/zone.h"

namespace tickwheel::testing {
namespace {

using server::DstGap;
using server::DstOverlap;
namespace recurrence_internal = server::recurrence_internal;

const char* const kZones[] = {"UTC",           "Europe/Berlin",       "America/New_York",
                              "Australia/Lord_Howe", "Asia/Tokyo", "Pacific/Chatham",
                              "America/Havana", "Antarctica/Troll",   "Europe/Dublin",
                              "Asia/Kathmandu"};
constexpr std::int64_t kBaseMs = 631152000000;             // 1990-01-01
constexpr std::int64_t kSpanMs = 110LL * 365 * 86400 * 1000;  // to ~2100
constexpr std::int64_t kWindowS = 1800;

void Require(bool ok, const std::string& what, std::string_view text) {
  if (!ok) FuzzFail("cron \"" + std::string(text) + "\": " + what);
}

bool NamesAField(const std::string& message) {
  for (const char* prefix : {"second: ", "minute: ", "hour: ", "day-of-month: ", "month: ",
                             "day-of-week: ", "the expression ", "\""}) {
    if (message.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

// Whether instant `u` (seconds) fires by the definition: its reading
// matches and was not shown before (unless "both"), or the clock jumped
// forward onto it over a matching reading ("shift").
struct Brute {
  const recurrence_internal::CronSearch& search;
  const recurrence_internal::Zone& zone;
  DstGap gap;
  DstOverlap overlap;
};

void CheckNothingSkipped(const Brute& b, std::int64_t start_s, std::int64_t next_s,
                         std::string_view text) {
  // The highest reading shown up to start_s (offsets change at most a few
  // hours: a day back is enough).
  std::int64_t shown = start_s + b.zone.At(start_s).utc_offset_s;
  for (std::int64_t u = start_s - 86400; u <= start_s;) {
    recurrence_internal::Zone::Period p = b.zone.At(u);
    std::int64_t last = std::min(p.end - 1, start_s);
    shown = std::max(shown, last + p.utc_offset_s);
    u = last + 1;
  }
  std::int64_t previous = start_s + b.zone.At(start_s).utc_offset_s;
  recurrence_internal::Zone::Period period = b.zone.At(start_s + 1);
  std::int64_t end = std::min(next_s, start_s + 1 + kWindowS);
  for (std::int64_t u = start_s + 1; u < end; ++u) {
    if (u >= period.end) period = b.zone.At(u);
    std::int64_t local = u + period.utc_offset_s;
    bool fires = b.search.Matches(local) && (b.overlap == DstOverlap::kBoth || local > shown);
    if (!fires && b.gap == DstGap::kShift) {
      for (std::int64_t r = previous + 1; r < local && !fires; ++r) {
        fires = r > shown && b.search.Matches(r);
      }
    }
    Require(!fires, "skipped " + std::to_string(u) + " (next " + std::to_string(next_s) + ")",
            text);
    shown = std::max(shown, local);
    previous = local;
  }
}

void FuzzOne(const std::uint8_t* data, std::size_t size) {
  const char* bytes = reinterpret_cast<const char*>(data);
  const void* nul = std::memchr(data, 0, size);
  std::size_t text_size = nul ? static_cast<std::size_t>(static_cast<const char*>(nul) - bytes)
                              : size;
  std::string_view text(bytes, text_size);
  std::size_t rest = nul ? size - text_size - 1 : 0;
  const std::uint8_t* params = data + text_size + (nul ? 1 : 0);
  std::uint8_t zone_index = rest > 0 ? params[0] : 0;
  std::uint8_t flags = rest > 1 ? params[1] : 0;
  std::uint64_t raw = 0;
  for (std::size_t i = 0; i < 8 && i + 2 < rest; ++i) raw |= std::uint64_t{params[i + 2]} << (8 * i);

  server::RecurrenceSpec spec;
  spec.cron = std::string(text);
  spec.time_zone = kZones[zone_index % std::size(kZones)];
  spec.dst_gap = (flags & 1) ? DstGap::kSkip : DstGap::kShift;
  spec.dst_overlap = (flags & 2) ? DstOverlap::kBoth : DstOverlap::kFirst;
  std::int64_t start_ms = static_cast<std::int64_t>(raw);
  if (!(flags & 4)) {
    std::int64_t m = static_cast<std::int64_t>(raw % static_cast<std::uint64_t>(kSpanMs));
    start_ms = kBaseMs + m;
  }

  server::Result<server::Recurrence> r = server::Recurrence::Compile(spec);
  if (!r.ok()) {
    const server::Status& s = r.status();
    Require(s.code() == server::StatusCode::kInvalidArgument, "refused as " + s.ToString(), text);
    if (text.empty()) {
      Require(s.field() == "every_ms", "empty cron refused as " + s.ToString(), text);
      return;
    }
    Require(s.field() == "cron", "refused with field " + s.field(), text);
    Require(NamesAField(s.message()), "the message names no field: " + s.message(), text);
    return;
  }
  recurrence_internal::CronSearch search(*recurrence_internal::ParseCronExpression(spec.cron));
  std::shared_ptr<const recurrence_internal::Zone> zone = *recurrence_internal::Zone::Find(spec.time_zone);

  std::int64_t after = start_ms;
  for (int step = 0; step < 3; ++step) {
    std::optional<std::int64_t> next = r->NextAfter(after);
    std::int64_t after_s = after / 1000 - (after % 1000 < 0 ? 1 : 0);
    bool in_range = after_s > recurrence_internal::kMinLocalSeconds + 2 * 86400 &&
                    after_s < recurrence_internal::kMaxLocalSeconds - 2 * 86400;
    if (in_range && step == 0) {
      CheckNothingSkipped(Brute{search, *zone, spec.dst_gap, spec.dst_overlap}, after_s,
                          next ? *next / 1000 : INT64_MAX, text);
    }
    if (!next) return;
    Require(*next > after, "next " + std::to_string(*next) + " is not after " +
                               std::to_string(after), text);
    Require(*next % 1000 == 0, "next " + std::to_string(*next) + " is not a whole second", text);
    std::int64_t next_s = *next / 1000;
    recurrence_internal::Zone::Period period = zone->At(next_s);
    std::int64_t local = next_s + period.utc_offset_s;
    Require(local <= recurrence_internal::kMaxLocalSeconds, "next reads past the year 9999", text);
    if (!search.Matches(local)) {
      // Only a shifted gap time: next is where a forward change ends, and a
      // reading the change skipped matches.
      Require(spec.dst_gap == DstGap::kShift && period.begin == next_s,
              "the reading of next (" + std::to_string(local) + ") does not match", text);
      std::int64_t before = next_s - 1 + zone->At(next_s - 1).utc_offset_s;
      bool skipped_match = false;
      for (std::int64_t g = before + 1; g < local && !skipped_match; ++g) {
        skipped_match = search.Matches(g);
      }
      Require(skipped_match, "next is a gap's end but no skipped reading matches", text);
    }
    Require(r->NextAfter(*next - 1) == next, "NextAfter(next - 1) is not next", text);
    server::LocalTime described = r->Describe(*next);
    Require(described.utc_offset_s == period.utc_offset_s, "Describe's offset differs", text);
    Require(!described.local.empty() && !described.abbreviation.empty(), "Describe is empty",
            text);
    after = *next;
  }
}

}  // namespace
}  // namespace tickwheel::testing

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  tickwheel::testing::FuzzOne(data, size);
  return 0;
}
