// SPDX-License-Identifier: Apache-2.0
// Cron schedules through Recurrence (server/schedule/recurrence.h): next
// times in a zone with every DST policy, across both transitions of
// Europe/Berlin, America/New_York, Australia/Lord_Howe (30 minutes) and
// Asia/Tokyo (none), in 2026 and after 2037 (the footer's rules); leap
// days, year boundaries, the seconds field, far-future and impossible
// expressions; Describe. The examples are checked by hand (and are those of
// docs/schedules.md); a brute-force oracle then checks NextAfter
// second by second around every transition.
#include <date/date.h>
#include <gtest/gtest.h>

#include <limits>
#include <set>
#include <string>
#include <vector>

#include "schedule/cron_search.h"
#include "schedule/recurrence.h"
#include "schedule/zone.h"

namespace tickwheel::server {
namespace {

using recurrence_internal::Zone;

std::int64_t UtcMs(int y, unsigned mo, unsigned d, int h = 0, int mi = 0, int s = 0) {
  return (date::sys_days(date::year(y) / date::month(mo) / date::day(d))
                  .time_since_epoch()
                  .count() *
              86400LL +
          h * 3600 + mi * 60 + s) *
         1000;
}

Recurrence Cron(const std::string& cron, const std::string& zone = "", DstGap gap = DstGap::kShift,
                DstOverlap overlap = DstOverlap::kFirst) {
  RecurrenceSpec spec;
  spec.cron = cron;
  spec.time_zone = zone;
  spec.dst_gap = gap;
  spec.dst_overlap = overlap;
  Result<Recurrence> r = Recurrence::Compile(spec);
  EXPECT_TRUE(r.ok()) << cron << " in " << zone << ": " << r.status().ToString();
  return *r;
}

// The next `n` fire times after `after_ms`, as the zone reads them.
std::vector<std::string> Next(const Recurrence& r, std::int64_t after_ms, int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) {
    std::optional<std::int64_t> next = r.NextAfter(after_ms);
    if (!next) break;
    EXPECT_GT(*next, after_ms);
    out.push_back(r.Describe(*next).local);
    after_ms = *next;
  }
  return out;
}

using Strings = std::vector<std::string>;

TEST(CronRecurrenceTest, UtcIsTheDefaultZoneAndIsShownBack) {
  Recurrence r = Cron("0 9 * * MON-FRI");
  EXPECT_EQ(r.zone_name(), "UTC");
  EXPECT_EQ(Next(r, UtcMs(2026, 3, 6, 12), 2),
            (Strings{"2026-03-09T09:00:00+00:00", "2026-03-10T09:00:00+00:00"}));
  EXPECT_EQ(r.Describe(UtcMs(2026, 3, 9, 9)).abbreviation, "UTC");
}

TEST(CronRecurrenceTest, WeekdaysAtNineInBerlinKeepNineAcrossTheChange) {
  Recurrence r = Cron("0 9 * * MON-FRI", "Europe/Berlin");
  EXPECT_EQ(r.zone_name(), "Europe/Berlin");
  EXPECT_EQ(Next(r, UtcMs(2026, 3, 26), 3),
            (Strings{"2026-03-26T09:00:00+01:00", "2026-03-27T09:00:00+01:00",
                     "2026-03-30T09:00:00+02:00"}));
}

TEST(CronRecurrenceTest, StrictlyAfterAndOnWholeSeconds) {
  Recurrence r = Cron("* * * * * *");
  EXPECT_EQ(r.NextAfter(1'000), 2'000);
  EXPECT_EQ(r.NextAfter(1'999), 2'000);
  EXPECT_EQ(r.NextAfter(-1), 0);
  EXPECT_EQ(r.NextAfter(-1'000), 0);
  EXPECT_EQ(r.NextAfter(-1'001), -1'000);
  Recurrence minutes = Cron("* * * * *");
  EXPECT_EQ(minutes.NextAfter(60'000), 120'000);
  EXPECT_EQ(minutes.NextAfter(59'999), 60'000);
}

TEST(CronRecurrenceTest, BerlinSpringGapShiftsToThreeOrSkips) {
  // 2026-03-29: 02:00 CET becomes 03:00 CEST; 02:30 does not exist.
  std::int64_t from = UtcMs(2026, 3, 28, 12);
  EXPECT_EQ(Next(Cron("30 2 * * *", "Europe/Berlin"), from, 2),
            (Strings{"2026-03-29T03:00:00+02:00", "2026-03-30T02:30:00+02:00"}));
  EXPECT_EQ(Next(Cron("30 2 * * *", "Europe/Berlin", DstGap::kSkip), from, 2),
            (Strings{"2026-03-30T02:30:00+02:00", "2026-03-31T02:30:00+02:00"}));
  // Every gap time shifts to the same instant: it fires once, and once
  // with a 03:00 time of its own.
  EXPECT_EQ(Next(Cron("*/30 * * * *", "Europe/Berlin"), UtcMs(2026, 3, 29, 0, 15), 3),
            (Strings{"2026-03-29T01:30:00+01:00", "2026-03-29T03:00:00+02:00",
                     "2026-03-29T03:30:00+02:00"}));
  EXPECT_EQ(
      Next(Cron("*/30 * * * *", "Europe/Berlin", DstGap::kSkip), UtcMs(2026, 3, 29, 0, 15), 3),
      (Strings{"2026-03-29T01:30:00+01:00", "2026-03-29T03:00:00+02:00",
               "2026-03-29T03:30:00+02:00"}));
  EXPECT_EQ(Next(Cron("15,45 2 * * *", "Europe/Berlin"), from, 3),
            (Strings{"2026-03-29T03:00:00+02:00", "2026-03-30T02:15:00+02:00",
                     "2026-03-30T02:45:00+02:00"}));
}

TEST(CronRecurrenceTest, BerlinAutumnOverlapFiresOnceOrTwice) {
  // 2026-10-25: 03:00 CEST becomes 02:00 CET; 02:30 happens twice.
  std::int64_t from = UtcMs(2026, 10, 24, 12);
  EXPECT_EQ(Next(Cron("30 2 * * *", "Europe/Berlin"), from, 2),
            (Strings{"2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00"}));
  EXPECT_EQ(Next(Cron("30 2 * * *", "Europe/Berlin", DstGap::kShift, DstOverlap::kBoth), from, 3),
            (Strings{"2026-10-25T02:30:00+02:00", "2026-10-25T02:30:00+01:00",
                     "2026-10-26T02:30:00+01:00"}));
  // Hourly: "first" leaves two real hours between 02:00 CEST and 03:00 CET;
  // "both" keeps the hour.
  std::int64_t night = UtcMs(2026, 10, 24, 23, 30);
  EXPECT_EQ(Next(Cron("0 * * * *", "Europe/Berlin"), night, 3),
            (Strings{"2026-10-25T02:00:00+02:00", "2026-10-25T03:00:00+01:00",
                     "2026-10-25T04:00:00+01:00"}));
  EXPECT_EQ(Next(Cron("0 * * * *", "Europe/Berlin", DstGap::kShift, DstOverlap::kBoth), night, 3),
            (Strings{"2026-10-25T02:00:00+02:00", "2026-10-25T02:00:00+01:00",
                     "2026-10-25T03:00:00+01:00"}));
}

TEST(CronRecurrenceTest, FromInsideTheOverlapEachPolicyGoesOnCorrectly) {
  // 02:40 CEST (first pass) and 02:10 CET (second pass).
  Recurrence first = Cron("20 2 * * *", "Europe/Berlin");
  Recurrence both = Cron("20 2 * * *", "Europe/Berlin", DstGap::kShift, DstOverlap::kBoth);
  std::int64_t first_pass = UtcMs(2026, 10, 25, 0, 40);
  std::int64_t second_pass = UtcMs(2026, 10, 25, 1, 10);
  EXPECT_EQ(Next(first, first_pass, 1), (Strings{"2026-10-26T02:20:00+01:00"}));
  EXPECT_EQ(Next(both, first_pass, 1), (Strings{"2026-10-25T02:20:00+01:00"}));
  EXPECT_EQ(Next(first, second_pass, 1), (Strings{"2026-10-26T02:20:00+01:00"}));
  EXPECT_EQ(Next(both, second_pass, 1), (Strings{"2026-10-25T02:20:00+01:00"}));
  EXPECT_EQ(Next(both, UtcMs(2026, 10, 25, 1, 20), 1), (Strings{"2026-10-26T02:20:00+01:00"}));
  // Every minute from the second pass: "first" waits for 03:00 CET.
  EXPECT_EQ(Next(Cron("* * * * *", "Europe/Berlin"), second_pass, 1),
            (Strings{"2026-10-25T03:00:00+01:00"}));
}

TEST(CronRecurrenceTest, FromJustBeforeAGapEndsItsShiftedTimesStillFire) {
  // Havana moves from 00:00 CST to 01:00 CDT (2026-03-08, 05:00 UTC):
  // midnight shifts to 01:00 CDT, also when asked a millisecond before.
  // (Found by cron_recurrence_fuzz's seed.)
  Recurrence havana = Cron("0 0 * * *", "America/Havana");
  std::int64_t gap_end = UtcMs(2026, 3, 8, 5);
  EXPECT_EQ(havana.NextAfter(gap_end - 1), gap_end);
  EXPECT_EQ(havana.NextAfter(gap_end - 1000), gap_end);
  EXPECT_EQ(havana.Describe(gap_end).local, "2026-03-08T01:00:00-04:00");
  EXPECT_EQ(Cron("30 2 * * *", "Europe/Berlin").NextAfter(UtcMs(2026, 3, 29, 1) - 1),
            UtcMs(2026, 3, 29, 1));
  EXPECT_EQ(Cron("30 2 * * *", "Europe/Berlin", DstGap::kSkip).NextAfter(UtcMs(2026, 3, 29, 1) - 1),
            UtcMs(2026, 3, 30, 0, 30));
}

TEST(CronRecurrenceTest, NewYorkSpringGapAndAutumnOverlap) {
  // 2026-03-08 02:00 EST -> 03:00 EDT; 2026-11-01 02:00 EDT -> 01:00 EST.
  EXPECT_EQ(Next(Cron("30 2 * * *", "America/New_York"), UtcMs(2026, 3, 7, 12), 2),
            (Strings{"2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00"}));
  EXPECT_EQ(Next(Cron("30 2 * * *", "America/New_York", DstGap::kSkip), UtcMs(2026, 3, 7, 12), 1),
            (Strings{"2026-03-09T02:30:00-04:00"}));
  EXPECT_EQ(Next(Cron("30 1 * * *", "America/New_York"), UtcMs(2026, 10, 31, 12), 2),
            (Strings{"2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00-05:00"}));
  EXPECT_EQ(Next(Cron("30 1 * * *", "America/New_York", DstGap::kShift, DstOverlap::kBoth),
                 UtcMs(2026, 10, 31, 12), 3),
            (Strings{"2026-11-01T01:30:00-04:00", "2026-11-01T01:30:00-05:00",
                     "2026-11-02T01:30:00-05:00"}));
  Recurrence r = Cron("30 1 * * *", "America/New_York");
  EXPECT_EQ(r.Describe(UtcMs(2026, 11, 1, 5, 30)).abbreviation, "EDT");
  EXPECT_EQ(r.Describe(UtcMs(2026, 11, 1, 6, 30)).abbreviation, "EST");
  EXPECT_EQ(r.Describe(UtcMs(2026, 11, 1, 6, 30)).utc_offset_s, -5 * 3600);
}

TEST(CronRecurrenceTest, LordHoweMovesByHalfAnHour) {
  // 2026-10-04 02:00 +10:30 -> 02:30 +11; 2026-04-05 02:00 +11 -> 01:30 +10:30.
  EXPECT_EQ(Next(Cron("15 2 * * *", "Australia/Lord_Howe"), UtcMs(2026, 10, 3), 2),
            (Strings{"2026-10-04T02:30:00+11:00", "2026-10-05T02:15:00+11:00"}));
  EXPECT_EQ(Next(Cron("15 2 * * *", "Australia/Lord_Howe", DstGap::kSkip), UtcMs(2026, 10, 3), 1),
            (Strings{"2026-10-05T02:15:00+11:00"}));
  EXPECT_EQ(Next(Cron("45 1 * * *", "Australia/Lord_Howe"), UtcMs(2026, 4, 4), 2),
            (Strings{"2026-04-05T01:45:00+11:00", "2026-04-06T01:45:00+10:30"}));
  EXPECT_EQ(Next(Cron("45 1 * * *", "Australia/Lord_Howe", DstGap::kShift, DstOverlap::kBoth),
                 UtcMs(2026, 4, 4), 3),
            (Strings{"2026-04-05T01:45:00+11:00", "2026-04-05T01:45:00+10:30",
                     "2026-04-06T01:45:00+10:30"}));
  // Outside the half hour nothing moves.
  EXPECT_EQ(Next(Cron("0 2 * * *", "Australia/Lord_Howe", DstGap::kShift, DstOverlap::kBoth),
                 UtcMs(2026, 4, 4), 2),
            (Strings{"2026-04-05T02:00:00+10:30", "2026-04-06T02:00:00+10:30"}));
}

TEST(CronRecurrenceTest, TokyoHasNoDstSoEveryPolicyIsTheSame) {
  for (DstGap gap : {DstGap::kShift, DstGap::kSkip}) {
    for (DstOverlap overlap : {DstOverlap::kFirst, DstOverlap::kBoth}) {
      Recurrence r = Cron("30 2 * * *", "Asia/Tokyo", gap, overlap);
      EXPECT_EQ(Next(r, UtcMs(2026, 3, 28), 3),
                (Strings{"2026-03-29T02:30:00+09:00", "2026-03-30T02:30:00+09:00",
                         "2026-03-31T02:30:00+09:00"}));
      EXPECT_EQ(Next(r, UtcMs(2026, 10, 24), 2),
                (Strings{"2026-10-25T02:30:00+09:00", "2026-10-26T02:30:00+09:00"}));
    }
  }
}

TEST(CronRecurrenceTest, DstAfter2037FollowsTheZonesRules) {
  // 2040-03-25 and 2040-10-28 in Berlin; 2045-11-05 in New York.
  EXPECT_EQ(Next(Cron("30 2 * * *", "Europe/Berlin"), UtcMs(2040, 3, 24, 12), 2),
            (Strings{"2040-03-25T03:00:00+02:00", "2040-03-26T02:30:00+02:00"}));
  EXPECT_EQ(Next(Cron("30 2 * * *", "Europe/Berlin", DstGap::kShift, DstOverlap::kBoth),
                 UtcMs(2040, 10, 27, 12), 2),
            (Strings{"2040-10-28T02:30:00+02:00", "2040-10-28T02:30:00+01:00"}));
  EXPECT_EQ(Next(Cron("0 9 1 7 *", "Europe/Berlin"), UtcMs(2039, 1, 1), 1),
            (Strings{"2039-07-01T09:00:00+02:00"}));
  EXPECT_EQ(Next(Cron("30 1 * * *", "America/New_York", DstGap::kShift, DstOverlap::kBoth),
                 UtcMs(2045, 11, 4, 12), 2),
            (Strings{"2045-11-05T01:30:00-04:00", "2045-11-05T01:30:00-05:00"}));
}

TEST(CronRecurrenceTest, LeapDaysInAZone) {
  Recurrence r = Cron("0 12 29 2 *", "America/New_York");
  EXPECT_EQ(Next(r, UtcMs(2026, 1, 1), 3),
            (Strings{"2028-02-29T12:00:00-05:00", "2032-02-29T12:00:00-05:00",
                     "2036-02-29T12:00:00-05:00"}));
  EXPECT_EQ(Next(r, UtcMs(2097, 1, 1), 1), (Strings{"2104-02-29T12:00:00-05:00"}));
  // The last day of February, leap or not.
  EXPECT_EQ(Next(Cron("0 0 L 2 *", "Asia/Tokyo"), UtcMs(2027, 3, 1), 2),
            (Strings{"2028-02-29T00:00:00+09:00", "2029-02-28T00:00:00+09:00"}));
}

TEST(CronRecurrenceTest, NewYearComesFirstInTheEastAndIsAnInstantOfItsOwnInEachZone) {
  Recurrence tokyo = Cron("0 0 1 1 *", "Asia/Tokyo");
  Recurrence berlin = Cron("0 0 1 1 *", "Europe/Berlin");
  Recurrence new_york = Cron("0 0 1 1 *", "America/New_York");
  std::int64_t from = UtcMs(2026, 12, 31);
  EXPECT_EQ(tokyo.NextAfter(from), UtcMs(2026, 12, 31, 15));
  EXPECT_EQ(berlin.NextAfter(from), UtcMs(2026, 12, 31, 23));
  EXPECT_EQ(new_york.NextAfter(from), UtcMs(2027, 1, 1, 5));
  EXPECT_EQ(Next(new_york, UtcMs(2027, 1, 1, 4), 1), (Strings{"2027-01-01T00:00:00-05:00"}));
}

TEST(CronRecurrenceTest, TheSecondsFieldAcrossTheGap) {
  // Every 20 seconds: 01:59:40 CET, then 03:00:00 CEST (all of 02:xx:xx
  // shifted onto it, once), then on.
  EXPECT_EQ(Next(Cron("*/20 * * * * *", "Europe/Berlin"), UtcMs(2026, 3, 29, 0, 59, 30), 4),
            (Strings{"2026-03-29T01:59:40+01:00", "2026-03-29T03:00:00+02:00",
                     "2026-03-29T03:00:20+02:00", "2026-03-29T03:00:40+02:00"}));
  EXPECT_EQ(Next(Cron("10 30 2 * * *", "Europe/Berlin"), UtcMs(2026, 3, 28, 12), 2),
            (Strings{"2026-03-29T03:00:00+02:00", "2026-03-30T02:30:10+02:00"}));
}

TEST(CronRecurrenceTest, RareDatesAreFoundAtOnceAndImpossibleOnesAreNone) {
  EXPECT_EQ(Next(Cron("0 0 * 2 MON#5", "Europe/Berlin"), UtcMs(2073, 1, 1), 1),
            (Strings{"2112-02-29T00:00:00+01:00"}));
  EXPECT_EQ(Next(Cron("0 0 31 * FRI", "Europe/Berlin"), UtcMs(2026, 4, 25), 1),
            (Strings{"2026-05-01T00:00:00+02:00"}));
  for (const char* text :
       {"0 0 30 2 *", "0 0 31 4 *", "0 0 31 APR,JUN,SEP,NOV ?", "0 0 30,31 2 *"}) {
    EXPECT_EQ(Cron(text, "Europe/Berlin").NextAfter(0), std::nullopt) << text;
  }
}

TEST(CronRecurrenceTest, ASpecWhoseEveryTimeIsSkippedEndsAfterTheBoundedSearch) {
  // 02:30 on the fifth Sunday of March: in Berlin always the change's day
  // since 1996 (the last Sunday), so "skip" never fires; "shift" does.
  Recurrence skip = Cron("30 2 * 3 SUN#5", "Europe/Berlin", DstGap::kSkip);
  EXPECT_EQ(skip.NextAfter(UtcMs(2026, 1, 1)), std::nullopt);
  Recurrence shift = Cron("30 2 * 3 SUN#5", "Europe/Berlin");
  EXPECT_EQ(Next(shift, UtcMs(2026, 1, 1), 1), (Strings{"2026-03-29T03:00:00+02:00"}));
}

TEST(CronRecurrenceTest, TheCalendarEndsWithTheYear9999) {
  Recurrence r = Cron("59 59 23 31 12 *");
  EXPECT_EQ(Next(r, UtcMs(9999, 1, 1), 2), (Strings{"9999-12-31T23:59:59+00:00"}));
  EXPECT_EQ(Cron("0 0 1 1 *", "Asia/Tokyo").NextAfter(UtcMs(9999, 6, 1)), std::nullopt);
  EXPECT_EQ(r.NextAfter(std::numeric_limits<std::int64_t>::max()), std::nullopt);
  // The last local time of 9999 in New York is an instant of the year
  // 10000, and found from any instant before it. (Found by
  // cron_recurrence_fuzz: NextAfter(next - 1) answered none.)
  Recurrence new_york = Cron("59 19 23 31 12 *", "America/New_York");
  std::optional<std::int64_t> last = new_york.NextAfter(UtcMs(9999, 12, 31, 23));
  ASSERT_TRUE(last);
  EXPECT_EQ(new_york.Describe(*last).local, "9999-12-31T23:19:59-05:00");
  EXPECT_EQ(new_york.NextAfter(*last - 1), last);
  EXPECT_EQ(new_york.NextAfter(*last), std::nullopt);
  // Before the year 1 the search starts at its beginning.
  std::optional<std::int64_t> first =
      Cron("0 0 1 1 *").NextAfter(std::numeric_limits<std::int64_t>::min());
  ASSERT_TRUE(first);
  EXPECT_EQ(Cron("0 0 1 1 *").Describe(*first).local, "0002-01-01T00:00:00+00:00");
}

TEST(CronRecurrenceTest, CompileNamesTheCronFieldOrTheZone) {
  RecurrenceSpec bad_cron;
  bad_cron.cron = "0 9 * * MON-FRY";
  Result<Recurrence> r = Recurrence::Compile(bad_cron);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().field(), "cron");
  EXPECT_EQ(r.status().message(), "day-of-week: \"FRY\" is not 0-7 or SUN-SAT");
  RecurrenceSpec bad_zone;
  bad_zone.cron = "0 9 * * *";
  bad_zone.time_zone = "Europe/Berln";
  r = Recurrence::Compile(bad_zone);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().field(), "time_zone");
}

// The oracle: every instant of a window, second by second, with only the
// zone's offset at each instant (Zone::At) and the expression's fields
// (Matches). An instant fires if its reading matches and the clock has not
// shown that reading before (or at all, with "both"); where the clock
// jumps forward, the instant after the jump fires ("shift") if a skipped
// reading matches.
struct Readings {
  std::int64_t begin_s;
  std::vector<std::int64_t> local;  // local[i]: the reading at begin_s + i
};

Readings Read(const Zone& zone, std::int64_t begin_s, std::int64_t end_s) {
  Readings r{begin_s, {}};
  r.local.reserve(static_cast<std::size_t>(end_s - begin_s + 1));
  for (std::int64_t u = begin_s - 1; u < end_s; ++u) r.local.push_back(u + zone.At(u).utc_offset_s);
  return r;  // local[0] is the reading just before the window
}

std::vector<std::int64_t> BruteForce(const recurrence_internal::CronSearch& search, const Readings& readings,
                                     const std::vector<bool>& matches, DstGap gap,
                                     DstOverlap overlap) {
  std::vector<std::int64_t> out;
  // The window starts hours before any change: readings before it are all
  // below local[0].
  std::int64_t shown_up_to = readings.local[0];
  for (std::size_t i = 1; i < readings.local.size(); ++i) {
    std::int64_t local = readings.local[i];
    bool fires = matches[i] && (overlap == DstOverlap::kBoth || local > shown_up_to);
    if (!fires && gap == DstGap::kShift) {
      for (std::int64_t skipped = readings.local[i - 1] + 1; skipped < local && !fires; ++skipped) {
        fires = skipped > shown_up_to && search.Matches(skipped);
      }
    }
    if (fires) out.push_back((readings.begin_s + static_cast<std::int64_t>(i) - 1) * 1000);
    shown_up_to = std::max(shown_up_to, local);
  }
  return out;
}

TEST(CronRecurrenceTest, NextAfterIsTheBruteForceSecondBySecondAroundEveryTransition) {
  struct Window {
    const char* zone;
    int y;
    unsigned m, d;
  };
  // Both 2026 transitions of each zone, and one from the footer.
  const Window windows[] = {
      {"Europe/Berlin", 2026, 3, 29},      {"Europe/Berlin", 2026, 10, 25},
      {"Europe/Berlin", 2041, 10, 27},     {"America/New_York", 2026, 3, 8},
      {"America/New_York", 2026, 11, 1},   {"America/New_York", 2044, 3, 13},
      {"Australia/Lord_Howe", 2026, 4, 5}, {"Australia/Lord_Howe", 2026, 10, 4},
      {"Australia/Lord_Howe", 2046, 4, 1}, {"Asia/Tokyo", 2026, 3, 29},
      {"America/Havana", 2026, 3, 8},      {"America/Havana", 2026, 11, 1},
  };
  const char* specs[] = {"*/15 * * * *",    "30 2 * * *", "0 * * * *",     "17 */7 * * * *",
                         "15,45 1-3 * * *", "0 0 * * *",  "59 59 1 * * *", "0 30 1,2 * * *"};
  int fires = 0;
  for (const Window& w : windows) {
    Result<std::shared_ptr<const Zone>> zone = Zone::Find(w.zone);
    ASSERT_TRUE(zone.ok());
    // From 00:00 UTC the day before, two days: the local night of the
    // change in every zone here (Lord Howe's is 15:00 UTC the day before).
    std::int64_t begin_s = UtcMs(w.y, w.m, w.d) / 1000 - 86400;
    std::int64_t end_s = begin_s + 2 * 86400;
    Readings readings = Read(**zone, begin_s, end_s);
    for (const char* text : specs) {
      recurrence_internal::CronSearch search(*recurrence_internal::ParseCronExpression(text));
      std::vector<bool> matches;
      for (std::int64_t local : readings.local) matches.push_back(search.Matches(local));
      for (DstGap gap : {DstGap::kShift, DstGap::kSkip}) {
        for (DstOverlap overlap : {DstOverlap::kFirst, DstOverlap::kBoth}) {
          Recurrence r = Cron(text, w.zone, gap, overlap);
          std::vector<std::int64_t> expected = BruteForce(search, readings, matches, gap, overlap);
          std::vector<std::int64_t> actual;
          std::int64_t t = begin_s * 1000 - 1;
          while (true) {
            std::optional<std::int64_t> next = r.NextAfter(t);
            if (!next || *next >= end_s * 1000) break;
            actual.push_back(*next);
            t = *next;
          }
          ASSERT_EQ(actual, expected) << text << " in " << w.zone << " " << w.y << "-" << w.m << " "
                                      << ToString(gap) << "/" << ToString(overlap);
          // From just before each fire time, it is the next one.
          for (std::int64_t f : expected) {
            ASSERT_EQ(r.NextAfter(f - 1), f) << text << " in " << w.zone << " at " << f;
            ASSERT_EQ(r.NextAfter(f - 1000), f) << text << " in " << w.zone << " at " << f;
          }
          fires += static_cast<int>(actual.size());
        }
      }
    }
  }
  EXPECT_GT(fires, 10000);
}

}  // namespace
}  // namespace tickwheel::server
