// SPDX-License-Identifier: Apache-2.0
// Zone and PosixTimeZone (server/schedule/zone.h, posix_time_zone.h): names,
// offsets, gaps and overlaps in Europe/Berlin, America/New_York,
// Australia/Lord_Howe (a 30-minute shift) and Asia/Tokyo (no DST), before
// and after 2037 (where the TZif footer takes over from date/tz); and the
// footer rules of every zone of the system's database checked against the
// transitions its file lists.
#include "schedule/zone.h"

#include <date/tz.h>
#include <gtest/gtest.h>

#include <string>

#include "schedule/posix_time_zone.h"

namespace tickwheel::server::recurrence_internal {
namespace {

using Kind = Zone::Resolved::Kind;

std::int64_t Utc(int y, unsigned mo, unsigned d, int h = 0, int mi = 0, int s = 0) {
  return date::sys_days(date::year(y) / date::month(mo) / date::day(d)).time_since_epoch().count() *
             86400LL +
         h * 3600 + mi * 60 + s;
}
// A wall-clock reading as local seconds (the same arithmetic, no zone).
std::int64_t Local(int y, unsigned mo, unsigned d, int h = 0, int mi = 0, int s = 0) {
  return Utc(y, mo, d, h, mi, s);
}

std::shared_ptr<const Zone> Load(const std::string& name) {
  Result<std::shared_ptr<const Zone>> zone = Zone::Find(name);
  EXPECT_TRUE(zone.ok()) << name << ": " << zone.status().ToString();
  return zone.ok() ? *zone : nullptr;
}

TEST(ZoneTest, FindsIanaNamesAndSharesEachZone) {
  std::shared_ptr<const Zone> berlin = Load("Europe/Berlin");
  ASSERT_TRUE(berlin);
  EXPECT_EQ(berlin->name(), "Europe/Berlin");
  EXPECT_EQ(Load("Europe/Berlin").get(), berlin.get());
  for (const char* name : {"UTC", "Etc/GMT+5", "US/Eastern", "America/Argentina/Buenos_Aires"}) {
    EXPECT_TRUE(Load(name)) << name;
  }
}

TEST(ZoneTest, UnknownNamesAreRefusedWithAHintForTheirCase) {
  Result<std::shared_ptr<const Zone>> lower = Zone::Find("europe/berlin");
  ASSERT_FALSE(lower.ok());
  EXPECT_EQ(lower.status().field(), "time_zone");
  EXPECT_NE(lower.status().message().find("did you mean \"Europe/Berlin\""), std::string::npos)
      << lower.status().message();
  for (const char* name : {"Mars/Olympus_Mons", "", "../../etc/passwd", "posix/Europe/Berlin",
                           "right/UTC", "Europe/Berlin\n", "zone.tab"}) {
    Result<std::shared_ptr<const Zone>> zone = Zone::Find(name);
    ASSERT_FALSE(zone.ok()) << name;
    EXPECT_EQ(zone.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(zone.status().message().find("is not in the tz database"), std::string::npos)
        << zone.status().message();
  }
}

TEST(ZoneTest, LocaltimeIsRefusedForItIsTheServersZone) {
  Result<std::shared_ptr<const Zone>> zone = Zone::Find("localtime");
  ASSERT_FALSE(zone.ok());
  EXPECT_NE(zone.status().message().find("the server's own zone"), std::string::npos);
}

TEST(ZoneTest, BerlinOffsetsAndAbbreviations) {
  std::shared_ptr<const Zone> z = Load("Europe/Berlin");
  Zone::Period winter = z->At(Utc(2026, 1, 15));
  EXPECT_EQ(winter.utc_offset_s, 3600);
  EXPECT_EQ(winter.abbreviation, "CET");
  EXPECT_EQ(winter.begin, Utc(2025, 10, 26, 1));
  EXPECT_EQ(winter.end, Utc(2026, 3, 29, 1));
  Zone::Period summer = z->At(Utc(2026, 3, 29, 1));
  EXPECT_EQ(summer.utc_offset_s, 7200);
  EXPECT_EQ(summer.abbreviation, "CEST");
  EXPECT_EQ(summer.end, Utc(2026, 10, 25, 1));
}

TEST(ZoneTest, BerlinKeepsSummerTimeAfter2037) {
  // date/tz alone says CET from 2037-10-25 on; the footer continues the rule.
  std::shared_ptr<const Zone> z = Load("Europe/Berlin");
  Zone::Period p = z->At(Utc(2040, 7, 1));
  EXPECT_EQ(p.utc_offset_s, 7200);
  EXPECT_EQ(p.abbreviation, "CEST");
  EXPECT_EQ(p.begin, Utc(2040, 3, 25, 1));  // the last Sunday of March 2040
  EXPECT_EQ(p.end, Utc(2040, 10, 28, 1));
  EXPECT_EQ(z->At(Utc(2040, 3, 25, 0, 59, 59)).utc_offset_s, 3600);
  EXPECT_EQ(z->At(Utc(2099, 8, 1)).utc_offset_s, 7200);
  EXPECT_EQ(z->At(Utc(9999, 12, 1)).utc_offset_s, 3600);
  // Across the boundary between the file's transitions and the footer.
  Zone::Period last_listed = z->At(Utc(2037, 12, 1));
  EXPECT_EQ(last_listed.utc_offset_s, 3600);
  EXPECT_EQ(last_listed.begin, Utc(2037, 10, 25, 1));
  EXPECT_EQ(last_listed.end, Utc(2038, 3, 28, 1));
}

TEST(ZoneTest, BerlinSpringGapAndAutumnOverlap) {
  std::shared_ptr<const Zone> z = Load("Europe/Berlin");
  Zone::Resolved gap = z->Resolve(Local(2026, 3, 29, 2, 30));
  EXPECT_EQ(gap.kind, Kind::kGap);
  EXPECT_EQ(gap.first, Utc(2026, 3, 29, 1));  // 03:00 CEST, where the gap ends
  EXPECT_EQ(z->Resolve(Local(2026, 3, 29, 2, 0)).kind, Kind::kGap);
  EXPECT_EQ(z->Resolve(Local(2026, 3, 29, 2, 59, 59)).kind, Kind::kGap);
  Zone::Resolved before = z->Resolve(Local(2026, 3, 29, 1, 59, 59));
  EXPECT_EQ(before.kind, Kind::kUnique);
  EXPECT_EQ(before.first, Utc(2026, 3, 29, 0, 59, 59));
  Zone::Resolved after = z->Resolve(Local(2026, 3, 29, 3));
  EXPECT_EQ(after.kind, Kind::kUnique);
  EXPECT_EQ(after.first, Utc(2026, 3, 29, 1));

  Zone::Resolved overlap = z->Resolve(Local(2026, 10, 25, 2, 30));
  EXPECT_EQ(overlap.kind, Kind::kOverlap);
  EXPECT_EQ(overlap.first, Utc(2026, 10, 25, 0, 30));   // 02:30 CEST
  EXPECT_EQ(overlap.second, Utc(2026, 10, 25, 1, 30));  // 02:30 CET
  EXPECT_EQ(z->Resolve(Local(2026, 10, 25, 2)).kind, Kind::kOverlap);
  EXPECT_EQ(z->Resolve(Local(2026, 10, 25, 3)).kind, Kind::kUnique);
  EXPECT_EQ(z->Resolve(Local(2026, 10, 25, 1, 59, 59)).kind, Kind::kUnique);
}

TEST(ZoneTest, NewYorkGapAndOverlapBeforeAndAfter2037) {
  std::shared_ptr<const Zone> z = Load("America/New_York");
  Zone::Resolved gap = z->Resolve(Local(2026, 3, 8, 2, 30));
  EXPECT_EQ(gap.kind, Kind::kGap);
  EXPECT_EQ(gap.first, Utc(2026, 3, 8, 7));  // 03:00 EDT
  Zone::Resolved overlap = z->Resolve(Local(2026, 11, 1, 1, 30));
  EXPECT_EQ(overlap.kind, Kind::kOverlap);
  EXPECT_EQ(overlap.first, Utc(2026, 11, 1, 5, 30));
  EXPECT_EQ(overlap.second, Utc(2026, 11, 1, 6, 30));
  // 2045, from the footer: second Sunday of March, first of November.
  Zone::Resolved gap45 = z->Resolve(Local(2045, 3, 12, 2, 30));
  EXPECT_EQ(gap45.kind, Kind::kGap);
  EXPECT_EQ(gap45.first, 2372914800);
  Zone::Resolved overlap45 = z->Resolve(Local(2045, 11, 5, 1, 30));
  EXPECT_EQ(overlap45.kind, Kind::kOverlap);
  EXPECT_EQ(overlap45.second, 2393476200);
  EXPECT_EQ(z->At(2393476200).abbreviation, "EST");
}

TEST(ZoneTest, LordHoweShiftsByHalfAnHour) {
  std::shared_ptr<const Zone> z = Load("Australia/Lord_Howe");
  // First Sunday of October: 02:00 +10:30 becomes 02:30 +11.
  Zone::Resolved gap = z->Resolve(Local(2026, 10, 4, 2, 15));
  EXPECT_EQ(gap.kind, Kind::kGap);
  EXPECT_EQ(gap.first, 1791041400);
  EXPECT_EQ(z->Resolve(Local(2026, 10, 4, 2, 30)).kind, Kind::kUnique);
  EXPECT_EQ(z->Resolve(Local(2026, 10, 4, 1, 59, 59)).kind, Kind::kUnique);
  // First Sunday of April: 02:00 +11 becomes 01:30 +10:30.
  Zone::Resolved overlap = z->Resolve(Local(2026, 4, 5, 1, 45));
  EXPECT_EQ(overlap.kind, Kind::kOverlap);
  EXPECT_EQ(overlap.first, 1775313900);
  EXPECT_EQ(overlap.second, 1775315700);
  EXPECT_EQ(z->Resolve(Local(2026, 4, 5, 1, 29, 59)).kind, Kind::kUnique);
  EXPECT_EQ(z->Resolve(Local(2026, 4, 5, 2)).kind, Kind::kUnique);
  EXPECT_EQ(z->At(overlap.second).utc_offset_s, 37800);
  // And from the footer.
  EXPECT_EQ(z->Resolve(Local(2045, 10, 1, 2, 10)).first, 2390398200);
  EXPECT_EQ(z->Resolve(Local(2045, 4, 2, 1, 45)).second, 2374672500);
}

TEST(ZoneTest, TokyoHasNoGapsOrOverlaps) {
  std::shared_ptr<const Zone> z = Load("Asia/Tokyo");
  for (std::int64_t local = Local(2026, 1, 1); local < Local(2027, 1, 1); local += 1800) {
    Zone::Resolved r = z->Resolve(local);
    ASSERT_EQ(r.kind, Kind::kUnique);
    ASSERT_EQ(r.first, local - 9 * 3600);
  }
  EXPECT_EQ(z->At(Utc(2050, 7, 1)).abbreviation, "JST");
}

TEST(ZoneTest, ResolveAgreesWithAtEverywhereOnAYearOfEachZone) {
  // Every local time maps to instants that read it, and every instant's
  // reading maps back to it.
  for (const char* name : {"Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Tokyo",
                           "Europe/Dublin", "Pacific/Chatham"}) {
    std::shared_ptr<const Zone> z = Load(name);
    for (int year : {2026, 2041}) {
      for (std::int64_t u = Utc(year, 1, 1); u < Utc(year + 1, 1, 1); u += 900) {
        std::int64_t local = u + z->At(u).utc_offset_s;
        Zone::Resolved r = z->Resolve(local);
        ASSERT_NE(r.kind, Kind::kGap) << name << " " << u;
        ASSERT_TRUE(r.first == u || (r.kind == Kind::kOverlap && r.second == u))
            << name << " " << u;
        ASSERT_EQ(r.first + z->At(r.first).utc_offset_s, local) << name;
        ASSERT_EQ(r.second + z->At(r.second).utc_offset_s, local) << name;
      }
    }
  }
}

TEST(PosixTimeZoneTest, ParsesTheFootersTzdataUses) {
  std::optional<PosixTimeZone> berlin = PosixTimeZone::Parse("CET-1CEST,M3.5.0,M10.5.0/3");
  ASSERT_TRUE(berlin);
  EXPECT_TRUE(berlin->has_dst());
  EXPECT_EQ(berlin->abbreviation(false), "CET");
  EXPECT_EQ(berlin->abbreviation(true), "CEST");
  EXPECT_EQ(berlin->At(Utc(2050, 1, 1)).utc_offset_s, 3600);
  EXPECT_EQ(berlin->At(Utc(2050, 7, 1)).utc_offset_s, 7200);
  std::optional<PosixTimeZone> lord_howe =
      PosixTimeZone::Parse("<+1030>-10:30<+11>-11,M10.1.0,M4.1.0");
  ASSERT_TRUE(lord_howe);
  EXPECT_EQ(lord_howe->abbreviation(false), "+1030");
  EXPECT_EQ(lord_howe->At(Utc(2050, 1, 1)).utc_offset_s, 39600);
  EXPECT_EQ(lord_howe->At(Utc(2050, 7, 1)).utc_offset_s, 37800);
  std::optional<PosixTimeZone> tokyo = PosixTimeZone::Parse("JST-9");
  ASSERT_TRUE(tokyo);
  EXPECT_FALSE(tokyo->has_dst());
  EXPECT_EQ(tokyo->At(Utc(2050, 7, 1)).utc_offset_s, 32400);
  // Negative DST (Dublin: winter is the "DST"), hours past 24 and below 0.
  std::optional<PosixTimeZone> dublin = PosixTimeZone::Parse("IST-1GMT0,M10.5.0,M3.5.0/1");
  ASSERT_TRUE(dublin);
  EXPECT_EQ(dublin->At(Utc(2050, 1, 1)).utc_offset_s, 0);
  EXPECT_EQ(dublin->At(Utc(2050, 7, 1)).utc_offset_s, 3600);
  EXPECT_TRUE(PosixTimeZone::Parse("<-02>2<-01>,M3.5.0/-1,M10.5.0/0"));
  EXPECT_TRUE(PosixTimeZone::Parse("IST-2IDT,M3.4.4/26,M10.5.0"));
  EXPECT_TRUE(PosixTimeZone::Parse("EST5EDT4,0/0,J365/25"));
  std::optional<PosixTimeZone> julian = PosixTimeZone::Parse("AAA3BBB,J60/2,300/2");
  ASSERT_TRUE(julian);
  // J60 is March 1 every year; 300 (from 0, counting February 29) is
  // October 27 in a leap year.
  EXPECT_EQ(julian->At(Utc(2048, 3, 1, 5)).begin, Utc(2048, 3, 1, 5));
  EXPECT_EQ(julian->At(Utc(2048, 3, 1, 5)).end, Utc(2048, 10, 27, 4));
}

TEST(PosixTimeZoneTest, RefusesWhatIsNotATzString) {
  for (const char* text :
       {"", "CE-1", "CET", "CET-1CEST,", "CET-1CEST,M3.5.0", "CET-1CEST,M13.5.0,M10.5.0",
        "CET-1CEST,M3.6.0,M10.5.0", "CET-1CEST,M3.5.7,M10.5.0", "CET-1CEST,J0,J365", "CET-25",
        "<+1030-10:30", "CET-1CEST,M3.5.0/168,M10.5.0", "CET-1CEST,M3.5.0,M10.5.0x"}) {
    EXPECT_FALSE(PosixTimeZone::Parse(text)) << text;
  }
}

TEST(PosixTimeZoneTest, EveryFooterOfTheSystemDatabaseMatchesItsListedTransitions) {
  // For each zone whose footer has DST and whose file lists transitions up
  // to 2037 (Debian's files), the footer's offsets over 2034-2037 equal
  // those date/tz reads from the file. (Asia/Gaza's file lists transitions
  // up to 2086 that move around Ramadan every year, which the footer,
  // taking over only after them, does not describe: it is left out.)
  int zones = 0, with_dst = 0;
  for (const date::time_zone& tz : date::get_tzdb().zones) {
    std::string name(tz.name());
    if (name == "localtime") continue;
    ++zones;
    ASSERT_TRUE(Zone::Find(name).ok()) << name;
    std::string footer = ReadTzifFooter(kZoneDirectory + name);
    ASSERT_FALSE(footer.empty()) << name;
    std::optional<PosixTimeZone> rule = PosixTimeZone::Parse(footer);
    ASSERT_TRUE(rule) << name << ": " << footer;
    if (!rule->has_dst()) continue;
    date::sys_info last = tz.get_info(date::sys_days(date::year(9999) / 1 / 1));
    std::int64_t listed_until = last.begin.time_since_epoch().count();
    if (listed_until < Utc(2037, 1, 1) || listed_until >= Utc(2038, 1, 1)) continue;
    ++with_dst;
    for (std::int64_t u = Utc(2034, 1, 1); u < listed_until; u += 3 * 3600) {
      date::sys_info info = tz.get_info(date::sys_seconds(std::chrono::seconds(u)));
      ASSERT_EQ(rule->At(u).utc_offset_s, info.offset.count())
          << name << " at " << u << ": " << footer;
    }
  }
  EXPECT_GT(zones, 400);
  EXPECT_GT(with_dst, 50);
}

}  // namespace
}  // namespace tickwheel::server::recurrence_internal
