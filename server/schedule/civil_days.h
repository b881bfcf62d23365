// SPDX-License-Identifier: Apache-2.0
// The little calendar arithmetic that the cron search, the cron recurrence
// and the POSIX zone rules share: seconds in a day, floor division, days
// since the epoch of a civil date, and the one character class their
// parsers need.
#ifndef TICKWHEEL_SERVER_SCHEDULE_CIVIL_DAYS_H_
#define TICKWHEEL_SERVER_SCHEDULE_CIVIL_DAYS_H_

#include <date/date.h>

#include <cstdint>

namespace tickwheel::server::recurrence_internal {

inline constexpr std::int64_t kSecondsPerDay = 86400;

// a / b rounded toward negative infinity (C++ rounds toward zero).
// REQUIRES: b != 0.
inline std::int64_t FloorDiv(std::int64_t a, std::int64_t b) {
  return a / b - ((a % b != 0) && ((a < 0) != (b < 0)) ? 1 : 0);
}

// Days from 1970-01-01 to y-m-d of the proleptic Gregorian calendar.
// REQUIRES: a valid date.
inline std::int64_t DaysFromCivil(int y, unsigned m, unsigned d) {
  return date::sys_days(date::year(y) / date::month(m) / date::day(d)).time_since_epoch().count();
}

// '0' to '9' only, whatever the locale.
inline bool IsAsciiDigit(char c) { return c >= '0' && c <= '9'; }

}  // namespace tickwheel::server::recurrence_internal

#endif  // TICKWHEEL_SERVER_SCHEDULE_CIVIL_DAYS_H_
