// SPDX-License-Identifier: Apache-2.0
// CronSearch: which local times a cron expression matches, and the next
// one from a given local time, on the proleptic Gregorian calendar without
// any zone (cron_recurrence.h maps local times to instants).
//
// Local times are seconds since 1970-01-01T00:00:00 on the wall clock,
// within the years 0001-9999.
#ifndef TICKWHEEL_SERVER_SCHEDULE_CRON_SEARCH_H_
#define TICKWHEEL_SERVER_SCHEDULE_CRON_SEARCH_H_

#include <array>
#include <cstdint>
#include <optional>

#include "schedule/cron_expression.h"

namespace tickwheel::server::recurrence_internal {

inline constexpr std::int64_t kMinLocalSeconds = -62135596800;  // 0001-01-01T00:00:00
inline constexpr std::int64_t kMaxLocalSeconds = 253402300799;  // 9999-12-31T23:59:59
// 400 Gregorian years: 146,097 days, exactly 20,871 weeks; the calendar
// (dates and weekdays together) repeats with this period.
inline constexpr std::int64_t kGregorianCycleSeconds = 146097LL * 86400;

// Thread safety: immutable after construction.
// Cost: NextMatch jumps field by field (month, day, hour, minute, second),
// one step per month in which no day matches; it never walks minutes.
//
//   CronSearch search(*ParseCronExpression("0 9 * * MON-FRI"));
//   std::optional<std::int64_t> t = search.NextMatch(local_now, local_now +
//   kGregorianCycleSeconds);
class CronSearch {
 public:
  explicit CronSearch(const CronExpression& expression);

  // The first local time >= `from` that matches, if there is one < `limit`
  // (and within year 9999). REQUIRES: from >= kMinLocalSeconds.
  std::optional<std::int64_t> NextMatch(std::int64_t from, std::int64_t limit) const;

  // Whether `local_s` matches every field.
  bool Matches(std::int64_t local_s) const;

  // The days of `month` of `year` that match (bit d for day d).
  std::uint32_t DaysOfMonth(int year, unsigned month) const;

  // False when no date can ever match (30 February, 31 April, ...): which
  // days match depends only on the month's length and on the weekday of
  // its first day, so this tries all of them.
  bool can_match() const { return can_match_; }

  const CronExpression& expression() const { return expression_; }

 private:
  std::uint32_t DaysOfMonth(unsigned month_length, unsigned first_weekday) const;
  // The first matching second of the day >= `second_of_day`, or -1.
  int NextTimeOfDay(int second_of_day) const;

  CronExpression expression_;
  // days_of_week_[w]: the days 1-31 of a month whose first day is weekday w
  // that day-of-week's plain values match.
  std::array<std::uint32_t, 7> days_of_week_{};
  bool can_match_ = false;
};

}  // namespace tickwheel::server::recurrence_internal

#endif  // TICKWHEEL_SERVER_SCHEDULE_CRON_SEARCH_H_
