// SPDX-License-Identifier: Apache-2.0
// Recurrence (server/schedule/recurrence.h): the spec's checks, every_ms
// with its anchor, the DST policy names and Describe. Cron's syntax, search
// and DST behaviour have their own tests (cron_*_test.cc).
#include "schedule/recurrence.h"

#include <gtest/gtest.h>

#include <limits>

namespace tickwheel::server {
namespace {

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();

Recurrence Every(std::int64_t every_ms, std::int64_t anchor_ms = 0) {
  RecurrenceSpec spec;
  spec.every_ms = every_ms;
  spec.anchor_ms = anchor_ms;
  Result<Recurrence> r = Recurrence::Compile(spec);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return *r;
}

Status CompileError(const RecurrenceSpec& spec) {
  Result<Recurrence> r = Recurrence::Compile(spec);
  EXPECT_FALSE(r.ok());
  return r.status();
}

TEST(RecurrenceTest, EveryFiresOnTheAnchorsGridStrictlyAfterTheInstant) {
  Recurrence r = Every(60'000, 1'000);
  EXPECT_EQ(r.NextAfter(0), 1'000);
  EXPECT_EQ(r.NextAfter(999), 1'000);
  EXPECT_EQ(r.NextAfter(1'000), 61'000);  // strictly after
  EXPECT_EQ(r.NextAfter(60'999), 61'000);
  EXPECT_EQ(r.NextAfter(61'000), 121'000);
  EXPECT_EQ(r.spec().every_ms, 60'000);
  EXPECT_EQ(r.zone_name(), "UTC");
}

TEST(RecurrenceTest, EveryExtendsTheGridBeforeTheAnchor) {
  Recurrence r = Every(1'000, 1'800'000'000'500);
  EXPECT_EQ(r.NextAfter(0), 500);
  EXPECT_EQ(r.NextAfter(-1), 500);
  EXPECT_EQ(r.NextAfter(-1'500), -500);
  EXPECT_EQ(r.NextAfter(-501), -500);
  EXPECT_EQ(r.NextAfter(-500), 500);
  EXPECT_EQ(r.NextAfter(1'800'000'000'499), 1'800'000'000'500);
}

TEST(RecurrenceTest, EverySuccessiveCallsWalkTheGridWithoutDrift) {
  Recurrence r = Every(7, 3);
  std::int64_t t = -100;
  for (int i = 0; i < 1000; ++i) {
    std::optional<std::int64_t> next = r.NextAfter(t);
    ASSERT_TRUE(next);
    EXPECT_GT(*next, t);
    EXPECT_LE(*next - t, 7);
    EXPECT_EQ(((*next - 3) % 7 + 7) % 7, 0);
    t = *next;
  }
}

TEST(RecurrenceTest, EveryHasNoTimePastInt64AndNoOverflowAtTheEnds) {
  Recurrence r = Every(kMax, 0);
  EXPECT_EQ(r.NextAfter(0), kMax);
  EXPECT_EQ(r.NextAfter(kMax - 1), kMax);
  EXPECT_EQ(r.NextAfter(kMax), std::nullopt);
  EXPECT_EQ(r.NextAfter(kMin), -kMax);
  Recurrence tiny = Every(1, kMin);
  EXPECT_EQ(tiny.NextAfter(kMin), kMin + 1);
  EXPECT_EQ(tiny.NextAfter(kMax - 1), kMax);
  EXPECT_EQ(tiny.NextAfter(kMax), std::nullopt);
  Recurrence far = Every(1'000, kMax);
  EXPECT_EQ(far.NextAfter(kMax - 1), kMax);
  // kMax - kMin = 2^64 - 1 = 18446744073709551615: 615 past the last step.
  EXPECT_EQ(far.NextAfter(kMin), kMin + 615);
}

TEST(RecurrenceTest, EveryMustBePositive) {
  for (std::int64_t bad : {std::int64_t{0}, std::int64_t{-5}, kMin}) {
    RecurrenceSpec spec;
    spec.every_ms = bad;
    Status s = CompileError(spec);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(s.field(), "every_ms");
    EXPECT_NE(s.message().find("at least 1"), std::string::npos) << s.message();
  }
}

TEST(RecurrenceTest, ASpecNeedsExactlyOneOfEveryAndCron) {
  Status none = CompileError(RecurrenceSpec{});
  EXPECT_EQ(none.field(), "every_ms");
  EXPECT_NE(none.message().find("every_ms or cron"), std::string::npos);
  RecurrenceSpec both;
  both.every_ms = 1'000;
  both.cron = "* * * * *";
  Status twice = CompileError(both);
  EXPECT_EQ(twice.field(), "cron");
  EXPECT_NE(twice.message().find("not both"), std::string::npos);
}

TEST(RecurrenceTest, TimeZoneIsRefusedWithEveryAndAnchorWithCron) {
  RecurrenceSpec every;
  every.every_ms = 1'000;
  every.time_zone = "Europe/Berlin";
  EXPECT_EQ(CompileError(every).field(), "time_zone");
  RecurrenceSpec cron;
  cron.cron = "* * * * *";
  cron.anchor_ms = 5;
  EXPECT_EQ(CompileError(cron).field(), "anchor_ms");
}

TEST(RecurrenceTest, EveryIgnoresTheDstPolicies) {
  RecurrenceSpec spec;
  spec.every_ms = 3'600'000;
  spec.dst_gap = DstGap::kSkip;
  spec.dst_overlap = DstOverlap::kBoth;
  Result<Recurrence> r = Recurrence::Compile(spec);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->NextAfter(0), 3'600'000);
}

TEST(RecurrenceTest, EveryDescribesInUtc) {
  Recurrence r = Every(1'000);
  LocalTime t = r.Describe(1'774'746'000'000);  // 2026-03-29T01:00:00Z
  EXPECT_EQ(t.local, "2026-03-29T01:00:00+00:00");
  EXPECT_EQ(t.utc_offset_s, 0);
  EXPECT_EQ(t.abbreviation, "UTC");
  EXPECT_EQ(r.Describe(1'774'746'000'250).local, "2026-03-29T01:00:00.250+00:00");
  EXPECT_EQ(r.Describe(-1).local, "1969-12-31T23:59:59.999+00:00");
}

TEST(RecurrenceTest, DstPolicyNamesRoundTripAndUnknownOnesNameTheirField) {
  EXPECT_EQ(*ParseDstGap("shift"), DstGap::kShift);
  EXPECT_EQ(*ParseDstGap("skip"), DstGap::kSkip);
  EXPECT_EQ(*ParseDstOverlap("first"), DstOverlap::kFirst);
  EXPECT_EQ(*ParseDstOverlap("both"), DstOverlap::kBoth);
  for (DstGap g : {DstGap::kShift, DstGap::kSkip}) EXPECT_EQ(*ParseDstGap(ToString(g)), g);
  for (DstOverlap o : {DstOverlap::kFirst, DstOverlap::kBoth}) {
    EXPECT_EQ(*ParseDstOverlap(ToString(o)), o);
  }
  Result<DstGap> gap = ParseDstGap("Shift");
  ASSERT_FALSE(gap.ok());
  EXPECT_EQ(gap.status().field(), "dst_gap");
  EXPECT_NE(gap.status().message().find("\"Shift\""), std::string::npos);
  Result<DstOverlap> overlap = ParseDstOverlap("");
  ASSERT_FALSE(overlap.ok());
  EXPECT_EQ(overlap.status().field(), "dst_overlap");
}

}  // namespace
}  // namespace tickwheel::server
