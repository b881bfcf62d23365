// SPDX-License-Identifier: Apache-2.0
#include "duration_flag.h"

#include <gtest/gtest.h>

namespace tickwheel::app {
namespace {

using namespace std::chrono_literals;

TEST(ParseDurationTest, AcceptsEveryUnit) {
  EXPECT_EQ(ParseDuration("250ns"), Duration(250ns));
  EXPECT_EQ(ParseDuration("3us"), Duration(3us));
  EXPECT_EQ(ParseDuration("250ms"), Duration(250ms));
  EXPECT_EQ(ParseDuration("30s"), Duration(30s));
  EXPECT_EQ(ParseDuration("1.5s"), Duration(1500ms));
  EXPECT_EQ(ParseDuration("2m"), Duration(120s));
  EXPECT_EQ(ParseDuration("1h"), Duration(3600s));
  EXPECT_EQ(ParseDuration("1d"), Duration(86400s));
  EXPECT_EQ(ParseDuration("0s"), Duration(0));
}

TEST(ParseDurationTest, AddsUpCompoundDurations) {
  EXPECT_EQ(ParseDuration("1h30m"), Duration(5400s));
  EXPECT_EQ(ParseDuration("2d12h"), Duration(216000s));
  EXPECT_EQ(ParseDuration("1m30.5s"), Duration(90500ms));
  EXPECT_EQ(ParseDuration("1s500ms"), Duration(1500ms));
}

TEST(ParseDurationTest, TakesABareZeroAsZero) {
  EXPECT_EQ(ParseDuration("0"), Duration(0));
  EXPECT_EQ(ParseDuration("0ms"), Duration(0));
}

TEST(ParseDurationTest, RejectsWhatIsNotADuration) {
  for (const char* bad : {"", "30", "s", "-5s", "5 s", "5sec", "abc", "1e30d",
                          "nan s", "5s5", "1h30", "00", "+5s", "1e3s", "1h-30m", "h30m",
                          "200000d"}) {
    EXPECT_EQ(ParseDuration(bad), std::nullopt) << bad;
  }
}

TEST(FormatDurationTest, PicksAReadableUnit) {
  EXPECT_EQ(FormatDuration(30s), "30s");
  EXPECT_EQ(FormatDuration(250ms), "250ms");
  EXPECT_EQ(FormatDuration(1500ms), "1.5s");
}

}  // namespace
}  // namespace tickwheel::app
