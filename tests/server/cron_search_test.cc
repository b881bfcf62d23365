// SPDX-License-Identifier: Apache-2.0
// CronSearch (server/schedule/cron_search.h): which local times an
// expression matches and the next one, on the calendar alone (no zone):
// the day-of-month / day-of-week rule, L, W, #, leap days, year
// boundaries, the seconds field, far-future and impossible expressions.
// Every NextMatch here is also checked against a second-by-second or
// day-by-day walk with Matches.
#include "schedule/cron_search.h"

#include <date/date.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tickwheel::server::recurrence_internal {
namespace {

// Local seconds of a wall-clock reading.
std::int64_t L(int y, unsigned mo, unsigned d, int h = 0, int mi = 0, int s = 0) {
  return date::sys_days(date::year(y) / date::month(mo) / date::day(d)).time_since_epoch().count() *
             86400LL +
         h * 3600 + mi * 60 + s;
}

std::string Text(std::int64_t local) {
  return date::format("%FT%T", date::sys_seconds(std::chrono::seconds(local)));
}

CronSearch Search(const std::string& text) {
  Result<CronExpression> e = ParseCronExpression(text);
  EXPECT_TRUE(e.ok()) << text << ": " << e.status().ToString();
  return CronSearch(e.ok() ? *e : CronExpression{});
}

// The matches from `from` on, `n` of them, as text.
std::vector<std::string> Next(const std::string& text, std::int64_t from, int n,
                              std::int64_t window = kGregorianCycleSeconds) {
  CronSearch search = Search(text);
  std::vector<std::string> out;
  const std::int64_t limit = from + window;
  for (int i = 0; i < n; ++i) {
    std::optional<std::int64_t> t = search.NextMatch(from, limit);
    if (!t) break;
    out.push_back(Text(*t));
    from = *t + 1;
  }
  return out;
}

// The matching days from `from`, by walking day by day with Matches (the
// reference for expressions that fire once a day at 00:00:00).
std::vector<std::string> WalkDays(const CronSearch& search, std::int64_t from, int n,
                                  int max_days) {
  std::vector<std::string> out;
  for (int i = 0; i < max_days && static_cast<int>(out.size()) < n; ++i) {
    std::int64_t t = from + i * 86400LL;
    if (search.Matches(t)) out.push_back(Text(t));
  }
  return out;
}

using Strings = std::vector<std::string>;

TEST(CronSearchTest, NextMatchIsAtOrAfterTheLocalTimeGiven) {
  EXPECT_EQ(Next("0 9 * * *", L(2026, 3, 1, 9), 2),
            (Strings{"2026-03-01T09:00:00", "2026-03-02T09:00:00"}));
  EXPECT_EQ(Next("0 9 * * *", L(2026, 3, 1, 9, 0, 1), 1), (Strings{"2026-03-02T09:00:00"}));
}

TEST(CronSearchTest, WeekdaysAtNineAcrossAWeekend) {
  EXPECT_EQ(Next("0 9 * * MON-FRI", L(2026, 3, 6, 12), 3),  // a Friday
            (Strings{"2026-03-09T09:00:00", "2026-03-10T09:00:00", "2026-03-11T09:00:00"}));
}

TEST(CronSearchTest, StepsWithinTheHourAndDay) {
  EXPECT_EQ(Next("10-50/20 */12 * * *", L(2026, 1, 1, 0, 11), 4),
            (Strings{"2026-01-01T00:30:00", "2026-01-01T00:50:00", "2026-01-01T12:10:00",
                     "2026-01-01T12:30:00"}));
}

TEST(CronSearchTest, TheSecondsFieldFiresWithinTheMinute) {
  EXPECT_EQ(Next("*/20 * * * * *", L(2026, 1, 1, 0, 0, 41), 3),
            (Strings{"2026-01-01T00:01:00", "2026-01-01T00:01:20", "2026-01-01T00:01:40"}));
  EXPECT_EQ(Next("59 59 23 31 12 *", L(2026, 6, 1), 2),
            (Strings{"2026-12-31T23:59:59", "2027-12-31T23:59:59"}));
}

TEST(CronSearchTest, YearBoundariesCarryEveryField) {
  EXPECT_EQ(Next("0 0 1 1 *", L(2026, 12, 31, 23, 59, 59), 2),
            (Strings{"2027-01-01T00:00:00", "2028-01-01T00:00:00"}));
  EXPECT_EQ(Next("* * * * *", L(2026, 12, 31, 23, 59, 1), 2),
            (Strings{"2027-01-01T00:00:00", "2027-01-01T00:01:00"}));
  EXPECT_EQ(Next("0 0 * JAN MON", L(2026, 12, 1), 1), (Strings{"2027-01-04T00:00:00"}));
}

TEST(CronSearchTest, LeapDaysComeEveryFourYearsButNotIn2100) {
  EXPECT_EQ(Next("0 0 29 2 *", L(2024, 3, 1), 3),
            (Strings{"2028-02-29T00:00:00", "2032-02-29T00:00:00", "2036-02-29T00:00:00"}));
  EXPECT_EQ(Next("0 0 29 2 *", L(2096, 3, 1), 1), (Strings{"2104-02-29T00:00:00"}));
  EXPECT_EQ(Next("0 0 29 2 *", L(2399, 1, 1), 1), (Strings{"2400-02-29T00:00:00"}));
  EXPECT_EQ(Next("0 0 L 2 *", L(2099, 3, 1), 2),
            (Strings{"2100-02-28T00:00:00", "2101-02-28T00:00:00"}));
}

TEST(CronSearchTest, BothDayFieldsRestrictedMatchEither) {
  // The 13th, or any Friday (Vixie cron's rule).
  CronSearch search = Search("0 0 13 * FRI");
  Strings expected{"2026-03-06T00:00:00", "2026-03-13T00:00:00", "2026-03-20T00:00:00",
                   "2026-03-27T00:00:00", "2026-04-03T00:00:00", "2026-04-10T00:00:00",
                   "2026-04-13T00:00:00"};
  EXPECT_EQ(Next("0 0 13 * FRI", L(2026, 3, 1), 7), expected);
  EXPECT_EQ(WalkDays(search, L(2026, 3, 1), 7, 100), expected);
  // "31 or Friday" is every Friday and every 31st: never slow, never empty.
  EXPECT_EQ(Next("0 0 31 * FRI", L(2026, 4, 25), 3),
            (Strings{"2026-05-01T00:00:00", "2026-05-08T00:00:00", "2026-05-15T00:00:00"}));
}

TEST(CronSearchTest, TheEitherRuleHoldsForTheSpecialDaysToo) {
  // The 1st, or the second Monday (croniter applies # to both halves).
  EXPECT_EQ(Next("0 0 1 * MON#2", L(2026, 3, 2), 4),
            (Strings{"2026-03-09T00:00:00", "2026-04-01T00:00:00", "2026-04-13T00:00:00",
                     "2026-05-01T00:00:00"}));
  // The last day, or the last Friday.
  EXPECT_EQ(Next("0 0 L * FRIL", L(2026, 4, 1), 3),
            (Strings{"2026-04-24T00:00:00", "2026-04-30T00:00:00", "2026-05-29T00:00:00"}));
  // February 31st never is: the Mondays of February remain.
  EXPECT_EQ(Next("0 0 31 2 MON", L(2026, 1, 1), 2),
            (Strings{"2026-02-02T00:00:00", "2026-02-09T00:00:00"}));
}

TEST(CronSearchTest, OneDayFieldUnrestrictedMeansTheOtherDecides) {
  EXPECT_EQ(Next("0 0 1-31 * MON", L(2026, 3, 3), 2),  // 1-31 is every day: Mondays
            (Strings{"2026-03-09T00:00:00", "2026-03-16T00:00:00"}));
  EXPECT_EQ(Next("0 0 */10 * 0-7", L(2026, 3, 3), 3),  // 0-7 is every day: the days
            (Strings{"2026-03-11T00:00:00", "2026-03-21T00:00:00", "2026-03-31T00:00:00"}));
}

TEST(CronSearchTest, LastDayOfEachMonth) {
  EXPECT_EQ(Next("0 0 L * *", L(2026, 1, 31, 0, 0, 1), 4),
            (Strings{"2026-02-28T00:00:00", "2026-03-31T00:00:00", "2026-04-30T00:00:00",
                     "2026-05-31T00:00:00"}));
  EXPECT_EQ(Next("0 0 L FEB *", L(2027, 6, 1), 2),
            (Strings{"2028-02-29T00:00:00", "2029-02-28T00:00:00"}));
  EXPECT_EQ(Next("0 0 15,L * *", L(2026, 4, 16), 2),
            (Strings{"2026-04-30T00:00:00", "2026-05-15T00:00:00"}));
}

TEST(CronSearchTest, NearestWeekdayStaysInItsMonth) {
  // 2026-08-01 is a Saturday: 1W is Monday the 3rd, not Friday July 31.
  EXPECT_EQ(Next("0 0 1W * *", L(2026, 7, 15), 1), (Strings{"2026-08-03T00:00:00"}));
  // 2026-03-15 is a Sunday: 15W is Monday the 16th; 2026-08-15 a Saturday:
  // Friday the 14th.
  EXPECT_EQ(Next("0 0 15W MAR,AUG *", L(2026, 1, 1), 2),
            (Strings{"2026-03-16T00:00:00", "2026-08-14T00:00:00"}));
  // 2026-05-31 is a Sunday and the last day: 31W is Friday the 29th.
  EXPECT_EQ(Next("0 0 31W * *", L(2026, 5, 1), 1), (Strings{"2026-05-29T00:00:00"}));
  // A month without day 31 has no 31W (as it has no 31).
  EXPECT_TRUE(Next("0 0 31W 4 *", L(2026, 1, 1), 1).empty());
  // LW: the last weekday; 2026-05-31 is a Sunday, 2026-10-31 a Saturday.
  EXPECT_EQ(Next("0 0 LW MAY,OCT *", L(2026, 1, 1), 2),
            (Strings{"2026-05-29T00:00:00", "2026-10-30T00:00:00"}));
}

TEST(CronSearchTest, NthWeekdayOfTheMonth) {
  EXPECT_EQ(Next("0 0 * * MON#2", L(2026, 1, 1), 3),
            (Strings{"2026-01-12T00:00:00", "2026-02-09T00:00:00", "2026-03-09T00:00:00"}));
  // A fifth Friday only in months that have one.
  EXPECT_EQ(Next("0 0 * * FRI#5", L(2026, 1, 1), 3),
            (Strings{"2026-01-30T00:00:00", "2026-05-29T00:00:00", "2026-07-31T00:00:00"}));
  // A fifth Monday in February: only a leap February that starts on a Monday.
  EXPECT_EQ(Next("0 0 * 2 MON#5", L(2024, 1, 1), 3),
            (Strings{"2044-02-29T00:00:00", "2072-02-29T00:00:00", "2112-02-29T00:00:00"}));
}

TEST(CronSearchTest, LastWeekdayOfTheMonth) {
  EXPECT_EQ(Next("0 0 * * FRIL", L(2026, 1, 1), 3),
            (Strings{"2026-01-30T00:00:00", "2026-02-27T00:00:00", "2026-03-27T00:00:00"}));
  EXPECT_EQ(Next("0 0 * * 0L,1#1", L(2026, 3, 1), 3),
            (Strings{"2026-03-02T00:00:00", "2026-03-29T00:00:00", "2026-04-06T00:00:00"}));
}

TEST(CronSearchTest, SpecialDaysAgreeWithAWalkOverManyYears) {
  for (const char* text :
       {"0 0 L * *", "0 0 LW * *", "0 0 1W,15W,31W * *", "0 0 * * MON#5", "0 0 * * SUNL,WED#3",
        "0 0 13 * FRI", "0 0 L * FRI#1", "0 0 29 2 *", "0 0 */3 * MON-WED", "0 0 ? 2 ?"}) {
    CronSearch search = Search(text);
    constexpr int kDays = 366 * 50;
    EXPECT_EQ(Next(text, L(2023, 11, 17), 120, kDays * 86400LL),
              WalkDays(search, L(2023, 11, 17), 120, kDays))
        << text;
  }
}

TEST(CronSearchTest, EverySecondMatchAgreesWithASecondBySecondWalk) {
  for (const char* text : {"*/7 */13 * * * *", "0,59 59 23 * * *", "30 */5 1-3 * * *"}) {
    CronSearch search = Search(text);
    std::int64_t from = L(2026, 12, 31, 22);
    std::optional<std::int64_t> next = search.NextMatch(from, from + 86400 * 2);
    for (std::int64_t t = from; t < from + 86400 + 7200; ++t) {
      if (!search.Matches(t)) continue;
      ASSERT_TRUE(next) << text;
      ASSERT_EQ(*next, t) << text << ": " << Text(*next) << " instead of " << Text(t);
      next = search.NextMatch(t + 1, from + 86400 * 2);
    }
  }
}

TEST(CronSearchTest, ImpossibleDatesAreKnownAtOnceAndNeverFound) {
  for (const char* text :
       {"0 0 30 2 *", "0 0 31 4,6,9,11 *", "0 0 30,31 FEB *", "0 0 31W 2 *", "0 0 30 2 ?"}) {
    CronSearch search = Search(text);
    EXPECT_FALSE(search.can_match()) << text;
    EXPECT_EQ(search.NextMatch(L(2026, 1, 1), kMaxLocalSeconds), std::nullopt) << text;
  }
  EXPECT_TRUE(Search("0 0 29 2 *").can_match());
  EXPECT_TRUE(Search("0 0 * 2 MON#5").can_match());
  EXPECT_TRUE(Search("0 0 30 2 MON").can_match());  // Mondays in February
}

TEST(CronSearchTest, TheSearchStopsAtItsLimitAndAtYear9999) {
  CronSearch leap = Search("0 0 29 2 *");
  EXPECT_EQ(leap.NextMatch(L(2097, 1, 1), L(2104, 1, 1)), std::nullopt);
  EXPECT_EQ(leap.NextMatch(L(2097, 1, 1), L(2104, 2, 29)),
            std::nullopt);  // limit excluded
  EXPECT_EQ(leap.NextMatch(L(2097, 1, 1), L(2104, 2, 29) + 1), L(2104, 2, 29));
  EXPECT_EQ(leap.NextMatch(L(9996, 2, 29, 0, 0, 1), kMaxLocalSeconds + 1000), std::nullopt);
  CronSearch last = Search("59 59 23 31 12 *");
  EXPECT_EQ(last.NextMatch(L(9999, 1, 1), kMaxLocalSeconds + 1000), kMaxLocalSeconds);
  EXPECT_EQ(last.NextMatch(kMaxLocalSeconds, kMaxLocalSeconds + 1000), kMaxLocalSeconds);
  CronSearch first = Search("* * * * * *");
  EXPECT_EQ(first.NextMatch(kMinLocalSeconds, kMinLocalSeconds + 10), kMinLocalSeconds);
}

TEST(CronSearchTest, DaysOfMonthIsTheMonthsPattern) {
  CronSearch search = Search("0 0 L * MON");  // the last day, or Mondays
  // March 2026: Mondays 2, 9, 16, 23, 30; last day 31.
  EXPECT_EQ(search.DaysOfMonth(2026, 3),
            (1u << 2) | (1u << 9) | (1u << 16) | (1u << 23) | (1u << 30) | (1u << 31));
}

}  // namespace
}  // namespace tickwheel::server::recurrence_internal
