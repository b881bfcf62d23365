// SPDX-License-Identifier: Apache-2.0
#include "schedule/cron_search.h"

#include <date/date.h>

#include <algorithm>
#include <bit>

#include "schedule/civil_days.h"

namespace tickwheel::server::recurrence_internal {
namespace {

// The lowest set bit of `mask` at or above `from`, or -1.
int NextBit(std::uint64_t mask, int from) {
  if (from >= 64) return -1;
  std::uint64_t rest = mask >> from;
  return rest == 0 ? -1 : from + std::countr_zero(rest);
}

unsigned MonthLength(int y, unsigned m) {
  return static_cast<unsigned>((date::year(y) / date::month(m) / date::last).day());
}

// 0 = Sunday; 1970-01-01 was a Thursday.
unsigned Weekday(std::int64_t days) { return static_cast<unsigned>(((days % 7) + 11) % 7); }

}  // namespace

CronSearch::CronSearch(const CronExpression& expression) : expression_(expression) {
  for (unsigned first = 0; first < 7; ++first) {
    std::uint32_t days = 0;
    for (unsigned d = 1; d <= 31; ++d) {
      if (expression_.days_of_week & (1u << ((first + d - 1) % 7))) days |= 1u << d;
    }
    days_of_week_[first] = days;
  }
  for (unsigned m = 1; m <= 12 && !can_match_; ++m) {
    if (!(expression_.months & (1u << m))) continue;
    for (int year : {2023, 2024}) {  // February: 28 and 29 days
      for (unsigned first = 0; first < 7; ++first) {
        if (DaysOfMonth(MonthLength(year, m), first) != 0) can_match_ = true;
      }
    }
  }
}

std::uint32_t CronSearch::DaysOfMonth(unsigned length, unsigned first) const {
  const CronExpression& e = expression_;
  const std::uint32_t valid = ((1u << length) - 1) << 1;  // days 1..length
  const unsigned last_weekday = (first + length - 1) % 7;
  auto weekday = [&](unsigned d) { return (first + d - 1) % 7; };

  std::uint32_t dom = e.days_of_month & valid;
  if (e.last_day_of_month) dom |= 1u << length;
  if (e.last_weekday_of_month) {
    unsigned d = last_weekday == 6 ? length - 1 : last_weekday == 0 ? length - 2 : length;
    dom |= 1u << d;
  }
  for (std::uint32_t w = e.nearest_weekday & valid; w != 0; w &= w - 1) {
    unsigned n = static_cast<unsigned>(std::countr_zero(w));
    unsigned d = n;
    if (weekday(n) == 6) d = n == 1 ? 3 : n - 1;           // Saturday: Friday, or Monday the 3rd
    if (weekday(n) == 0) d = n == length ? n - 2 : n + 1;  // Sunday: Monday, or Friday
    dom |= 1u << d;
  }

  std::uint32_t dow = days_of_week_[first] & valid;
  for (unsigned w = 0; w < 7; ++w) {
    unsigned first_w = 1 + (w + 7 - first) % 7;  // the first day of weekday w
    for (unsigned k = 0; k < 5; ++k) {
      unsigned d = first_w + 7 * k;
      if ((e.nth_weekday[w] & (1u << k)) && d <= length) dow |= 1u << d;
    }
    if (e.last_weekday & (1u << w)) dow |= 1u << (length - (last_weekday + 7 - w) % 7);
  }

  if (e.day_of_month_restricted && e.day_of_week_restricted) return dom | dow;
  if (e.day_of_month_restricted) return dom;
  if (e.day_of_week_restricted) return dow;
  return valid;
}

std::uint32_t CronSearch::DaysOfMonth(int year, unsigned month) const {
  return DaysOfMonth(MonthLength(year, month), Weekday(DaysFromCivil(year, month, 1)));
}

int CronSearch::NextTimeOfDay(int second_of_day) const {
  int h = second_of_day / 3600, m = second_of_day / 60 % 60, s = second_of_day % 60;
  while (h < 24) {
    int hour = NextBit(expression_.hours, h);
    if (hour < 0) return -1;
    if (hour != h) h = hour, m = 0, s = 0;
    int minute = NextBit(expression_.minutes, m);
    if (minute < 0) {
      ++h, m = 0, s = 0;
      continue;
    }
    if (minute != m) m = minute, s = 0;
    int second = NextBit(expression_.seconds, s);
    if (second < 0) {
      s = 0;
      if (++m == 60) ++h, m = 0;
      continue;
    }
    return h * 3600 + m * 60 + second;
  }
  return -1;
}

std::optional<std::int64_t> CronSearch::NextMatch(std::int64_t from, std::int64_t limit) const {
  limit = std::min(limit, kMaxLocalSeconds + 1);
  if (!can_match_ || from >= limit) return std::nullopt;
  std::int64_t days = FloorDiv(from, kSecondsPerDay);
  int second_of_day = static_cast<int>(from - days * kSecondsPerDay);
  date::year_month_day ymd{date::sys_days(date::days(days))};
  int year = static_cast<int>(ymd.year());
  unsigned month = static_cast<unsigned>(ymd.month());
  unsigned day = static_cast<unsigned>(ymd.day());

  while (true) {
    if (!(expression_.months & (1u << month))) {
      int next = NextBit(expression_.months, static_cast<int>(month) + 1);
      if (next < 0) {
        ++year;
        next = NextBit(expression_.months, 1);
      }
      month = static_cast<unsigned>(next);
      day = 1;
      second_of_day = 0;
    }
    if (year > 9999 || DaysFromCivil(year, month, 1) * kSecondsPerDay >= limit) return std::nullopt;
    std::uint64_t mask = static_cast<std::uint64_t>(DaysOfMonth(year, month)) >> day << day;
    for (; mask != 0; mask &= mask - 1) {
      unsigned d = static_cast<unsigned>(std::countr_zero(mask));
      if (d != day) day = d, second_of_day = 0;
      std::int64_t day_start = DaysFromCivil(year, month, day) * kSecondsPerDay;
      if (day_start >= limit) return std::nullopt;
      int time = NextTimeOfDay(second_of_day);
      if (time >= 0) {
        std::int64_t t = day_start + time;
        if (t >= limit) return std::nullopt;
        return t;
      }
      second_of_day = 0;
    }
    if (++month == 13) ++year, month = 1;
    day = 1;
    second_of_day = 0;
  }
}

bool CronSearch::Matches(std::int64_t local_s) const {
  std::int64_t days = FloorDiv(local_s, kSecondsPerDay);
  int second_of_day = static_cast<int>(local_s - days * kSecondsPerDay);
  date::year_month_day ymd{date::sys_days(date::days(days))};
  unsigned month = static_cast<unsigned>(ymd.month());
  unsigned day = static_cast<unsigned>(ymd.day());
  return (expression_.months & (1u << month)) &&
         (DaysOfMonth(static_cast<int>(ymd.year()), month) & (1u << day)) &&
         (expression_.hours & (1u << (second_of_day / 3600))) &&
         (expression_.minutes & (std::uint64_t{1} << (second_of_day / 60 % 60))) &&
         (expression_.seconds & (std::uint64_t{1} << (second_of_day % 60)));
}

}  // namespace tickwheel::server::recurrence_internal
