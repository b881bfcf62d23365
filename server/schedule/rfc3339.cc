// SPDX-License-Identifier: Apache-2.0
#include "schedule/rfc3339.h"

#include <cstdio>

namespace tickwheel::server::recurrence_internal {
namespace {

constexpr std::int64_t kMsPerDay = 86'400'000;

struct Civil {
  std::int64_t year;
  int month;
  int day;
};

// Howard Hinnant's civil_from_days, in 64 bits so that every int64 instant
// has a date (years past 9999 get more digits).
Civil CivilFromDays(std::int64_t days) {
  std::int64_t z = days + 719468;
  std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  std::int64_t doe = z - era * 146097;
  std::int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  std::int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  std::int64_t mp = (5 * doy + 2) / 153;
  int day = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
  int month = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  return {yoe + era * 400 + (month <= 2 ? 1 : 0), month, day};
}

}  // namespace

std::string FormatRfc3339(std::int64_t unix_ms, std::int32_t utc_offset_s) {
  // Split first, then add the offset to the time of day: no overflow at
  // the ends of int64.
  std::int64_t days = unix_ms / kMsPerDay - (unix_ms % kMsPerDay < 0 ? 1 : 0);
  std::int64_t ms_of_day = unix_ms - days * kMsPerDay + std::int64_t{utc_offset_s} * 1000;
  while (ms_of_day < 0) ms_of_day += kMsPerDay, --days;
  while (ms_of_day >= kMsPerDay) ms_of_day -= kMsPerDay, ++days;
  Civil date = CivilFromDays(days);
  int ms = static_cast<int>(ms_of_day % 1000);
  int seconds = static_cast<int>(ms_of_day / 1000);
  char buf[96];
  int n = std::snprintf(buf, sizeof buf, "%04lld-%02d-%02dT%02d:%02d:%02d",
                        static_cast<long long>(date.year), date.month, date.day, seconds / 3600,
                        seconds / 60 % 60, seconds % 60);
  std::string out(buf, static_cast<std::size_t>(n));
  if (ms != 0) {
    n = std::snprintf(buf, sizeof buf, ".%03d", ms);
    out.append(buf, static_cast<std::size_t>(n));
  }
  std::int32_t abs = utc_offset_s < 0 ? -utc_offset_s : utc_offset_s;
  n = std::snprintf(buf, sizeof buf, "%c%02d:%02d", utc_offset_s < 0 ? '-' : '+', abs / 3600,
                    abs / 60 % 60);
  out.append(buf, static_cast<std::size_t>(n));
  if (abs % 60 != 0) {  // local mean time before ~1900: keep the seconds
    n = std::snprintf(buf, sizeof buf, ":%02d", abs % 60);
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

}  // namespace tickwheel::server::recurrence_internal
