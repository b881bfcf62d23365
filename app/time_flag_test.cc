// SPDX-License-Identifier: Apache-2.0
#include "time_flag.h"

#include <gtest/gtest.h>

namespace tickwheel::app {
namespace {

std::int64_t Parsed(const char* text) {
  std::int64_t ms = -1;
  std::string error;
  EXPECT_TRUE(ParseTimeFlag(text, ms, error)) << text << ": " << error;
  return ms;
}

std::string Refusal(const char* text) {
  std::int64_t ms = -1;
  std::string error;
  EXPECT_FALSE(ParseTimeFlag(text, ms, error)) << text;
  return error;
}

TEST(ParseTimeFlagTest, ReadsRfc3339InUtcAndWithOffsets) {
  EXPECT_EQ(Parsed("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(Parsed("2026-11-25T20:00:00Z"), 1795636800000);
  EXPECT_EQ(Parsed("2026-11-25T20:00:00.250Z"), 1795636800250);
  EXPECT_EQ(Parsed("2026-11-25t20:00:00.2z"), 1795636800200);
  EXPECT_EQ(Parsed("2026-11-25 21:00:00+01:00"), 1795636800000);
  EXPECT_EQ(Parsed("2026-11-25T15:30:00-04:30"), 1795636800000);
  EXPECT_EQ(Parsed("2024-02-29T00:00:00Z"), 1709164800000);
}

TEST(ParseTimeFlagTest, RefusesABareNumberAsSecondsOrMillisecondsAlike) {
  // `date +%s` (seconds) was once taken as milliseconds and fired at once.
  EXPECT_NE(Refusal("1795636800").find("seconds or milliseconds"), std::string::npos);
  EXPECT_NE(Refusal("1795636800000").find("seconds or milliseconds"), std::string::npos);
}

TEST(ParseTimeFlagTest, RefusesWhatIsNotAFullTimeWithAZone) {
  EXPECT_NE(Refusal("2026-11-25T20:00:00").find("time zone"), std::string::npos);
  for (const char* bad : {"", "now", "2026-11-25", "2026-02-30T00:00:00Z", "2026-11-25T24:00:00Z",
                          "2026-11-25T20:00:00+1", "2026-11-25T20:00:00Zjunk", "30s",
                          "2026-11-25T20:00:00.Z"}) {
    Refusal(bad);
  }
}

TEST(FormatRfc3339Test, PrintsUtcWithMillisecondsAndTheZ) {
  EXPECT_EQ(FormatRfc3339(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(FormatRfc3339(1795636800250), "2026-11-25T20:00:00.250Z");
  std::int64_t back = 0;
  std::string error;
  ASSERT_TRUE(ParseTimeFlag(FormatRfc3339(1795636800250), back, error));
  EXPECT_EQ(back, 1795636800250);
}

}  // namespace
}  // namespace tickwheel::app
