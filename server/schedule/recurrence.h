// SPDX-License-Identifier: Apache-2.0
// Recurrence: when a schedule fires. The contract between the recurrence
// engine (this folder's cron parsing, time zones and search) and the
// schedule service above it (/work/coord/recurrence_interface.md); the
// cron syntax and the DST policies are described for users in
// docs/schedules.md, "Cron expressions and time zones".
#ifndef TICKWHEEL_SERVER_SCHEDULE_RECURRENCE_H_
#define TICKWHEEL_SERVER_SCHEDULE_RECURRENCE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"  // Status, Result<T>

namespace tickwheel::server {

// What happens to a local time that does not exist (the spring-forward gap).
enum class DstGap {
  kShift,  // "shift" (default): fire at the first valid instant after the gap
  kSkip,   // "skip": do not fire for it
};
// What happens to a local time that exists twice (the fall-back overlap).
enum class DstOverlap {
  kFirst,  // "first" (default): fire once, at the earlier instant
  kBoth,   // "both": fire at each of the two instants
};

struct RecurrenceSpec {
  // Exactly one of every_ms (> 0) and cron (non-empty).
  std::optional<std::int64_t> every_ms;
  std::int64_t anchor_ms = 0;  // every_ms: occurrences at anchor_ms + k * every_ms
  std::string cron;            // 5 fields, or 6 with seconds first
  std::string time_zone;       // IANA name; "" means UTC. Only with cron.
  DstGap dst_gap = DstGap::kShift;
  DstOverlap dst_overlap = DstOverlap::kFirst;
};

// One fire time as a person reads it in the schedule's zone.
struct LocalTime {
  std::string local;  // "2026-03-29T03:00:00+02:00" (RFC 3339 with offset)
  std::int32_t utc_offset_s;
  std::string abbreviation;  // "CEST"
};

namespace recurrence_internal {
class CronRecurrence;  // cron_recurrence.h
}

// Recurrence: when a schedule fires. Pure computation: no store, no clock.
//
// Thread safety: immutable once compiled; const methods may be called from
// any thread. Copies are cheap (they share the compiled expression).
// Cost: NextAfter takes a few hundred nanoseconds for cron (a few
// microseconds for rare dates such as "0 0 * 2 MON#5"; docs/performance.md)
// and never walks time minute by minute (it runs once per fired
// occurrence, a million schedules a minute); every_ms is a few integer
// operations.
//
//   Result<Recurrence> r = Recurrence::Compile(
//       {.cron = "0 9 * * MON-FRI", .time_zone = "Europe/Berlin"});
//   std::optional<std::int64_t> next = r->NextAfter(now_ms);
//
// Instants are Unix milliseconds (UTC). Cron schedules fire on whole
// seconds of local time in the years 0001-9999; every_ms schedules at any
// millisecond that fits in int64.
class Recurrence {
 public:
  // Checks the spec; kInvalidArgument with the field ("every_ms",
  // "anchor_ms", "cron", "time_zone", "dst_gap", "dst_overlap") and a
  // message saying what is wrong (for cron: which field of the expression
  // and why). every_ms ignores dst_gap and dst_overlap (UTC has no DST);
  // anchor_ms and time_zone are refused with cron and every_ms
  // respectively when they are set (non-zero, non-empty).
  static Result<Recurrence> Compile(const RecurrenceSpec& spec);

  // The first fire instant strictly after `after_ms` (Unix ms, UTC), with
  // the DST policies applied (a shifted gap time is the first valid instant
  // after the gap; "both" yields both instants of an overlap time, in
  // order), or nullopt if there is none (e.g. "0 0 30 2 *", or past the
  // year 9999, or past INT64_MAX for every_ms).
  std::optional<std::int64_t> NextAfter(std::int64_t after_ms) const;

  // `ms` in the schedule's zone (UTC for every_ms), with milliseconds
  // (".250") only when they are not zero.
  LocalTime Describe(std::int64_t ms) const;

  const RecurrenceSpec& spec() const { return spec_; }
  std::string_view zone_name() const;  // "UTC" when the spec's is ""

 private:
  Recurrence() = default;

  RecurrenceSpec spec_;
  std::shared_ptr<const recurrence_internal::CronRecurrence> cron_;  // null for every_ms
};

// "shift"/"skip", "first"/"both" <-> the enums; kInvalidArgument otherwise
// (field "dst_gap" / "dst_overlap").
Result<DstGap> ParseDstGap(std::string_view);
Result<DstOverlap> ParseDstOverlap(std::string_view);
std::string_view ToString(DstGap);
std::string_view ToString(DstOverlap);

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_SCHEDULE_RECURRENCE_H_
