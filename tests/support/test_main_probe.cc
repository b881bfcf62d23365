// SPDX-License-Identifier: Apache-2.0
// A GoogleTest executable with tests that pass, skip, are disabled or
// cannot run, linked with the project's test main (test_main.cc) and its own
// list of allowed skips (test_main_probe_skips.txt). test_main_test.cc runs
// it with filters and checks how the main judges each run. Not a CTest test.
#include <gtest/gtest.h>

namespace {

TEST(Probe, Passes) {}

TEST(Probe, Skips) { GTEST_SKIP() << "the probe skips"; }

TEST(Probe, SkipsWhereAllowed) { GTEST_SKIP() << "the probe skips where allowed"; }

TEST(DISABLED_Probe, IsDisabled) {}

class ProbeWithoutItsServer : public testing::Test {
 protected:
  static void SetUpTestSuite() { FAIL() << "the probe's server did not start"; }
};

TEST_F(ProbeWithoutItsServer, NeedsIt) {}

}  // namespace
