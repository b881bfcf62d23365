// SPDX-License-Identifier: Apache-2.0
// A cron expression, parsed: the set of values each field matches. The
// syntax, for users, is in docs/schedules.md ("Cron expressions and time
// zones"); this is its grammar and what each construct becomes.
//
//   expression  := [second] minute hour day-of-month month day-of-week
//                | "@yearly" | "@annually" | "@monthly" | "@weekly"
//                | "@daily" | "@midnight" | "@hourly"
//   field       := item ("," item)*
//   item        := ("*" | value | value "-" value) ["/" step]
//                | "?"                      (day-of-month, day-of-week: as *)
//                | "L" | "LW" | day "W"     (day-of-month)
//                | weekday "#" n | weekday "L"   (day-of-week; n in 1-5)
//   value       := a number, or a name: JAN-DEC (month), SUN-SAT (day of
//                  week; 0 and 7 are both Sunday); names in any case
//   "a/s"       := "a-<field's maximum>/s"
//
// Fields are separated by spaces or tabs; 6 fields put the seconds first.
// Ranges do not wrap around (20-5 is refused), except that a day-of-week
// range may end on Sunday as 0 (FRI-SUN).
//
// Day matching (Vixie cron's rule, and croniter's): when both day-of-month
// and day-of-week are restricted (neither matches every day), a day matches
// if EITHER matches; otherwise both must (one of them being everything).
// "Restricted" is about the set, not the spelling: 1-31 is as unrestricted
// as *, and */2 is restricted.
#ifndef TICKWHEEL_SERVER_SCHEDULE_CRON_EXPRESSION_H_
#define TICKWHEEL_SERVER_SCHEDULE_CRON_EXPRESSION_H_

#include <array>
#include <cstdint>
#include <string_view>

#include "common/status.h"

namespace tickwheel::server::recurrence_internal {

// Thread safety: a value type. Bit i of a set means the value i matches.
struct CronExpression {
  std::uint64_t seconds = 0;                  // 0-59 ({0} when there are 5 fields)
  std::uint64_t minutes = 0;                  // 0-59
  std::uint32_t hours = 0;                    // 0-23
  std::uint32_t days_of_month = 0;            // 1-31
  std::uint32_t nearest_weekday = 0;          // 1-31: "nW", the weekday nearest day n
  bool last_day_of_month = false;             // "L"
  bool last_weekday_of_month = false;         // "LW"
  std::uint16_t months = 0;                   // 1-12
  std::uint8_t days_of_week = 0;              // 0-6, Sunday 0
  std::array<std::uint8_t, 7> nth_weekday{};  // [weekday]: bit n-1 for "weekday#n"
  std::uint8_t last_weekday = 0;              // bit w: "wL", the last weekday w of the month
  // Whether the day fields restrict the days (see the file comment).
  bool day_of_month_restricted = false;
  bool day_of_week_restricted = false;
  bool has_seconds = false;  // 6 fields were given
};

// Parses `text`. kInvalidArgument (field "cron") naming the cron field and
// what is wrong: "day-of-week: 8 is not 0-7 or SUN-SAT".
Result<CronExpression> ParseCronExpression(std::string_view text);

}  // namespace tickwheel::server::recurrence_internal

#endif  // TICKWHEEL_SERVER_SCHEDULE_CRON_EXPRESSION_H_
