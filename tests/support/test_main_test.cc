// SPDX-License-Identifier: Apache-2.0
// The project's test main (test_main.cc) judged on test_main_probe: a run
// fails when it runs no test, when a test skips without leave, when a
// disabled test is run, and when a suite's SetUpTestSuite failed; a run
// passes when its tests pass, when a listed skip's variable is set, and when
// the tests are only listed (gtest_discover_tests does that).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace {

struct ProbeRun {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

// Runs the probe with `args` and, in the environment, only the variables
// `env` sets among those the main reads.
ProbeRun RunProbe(const std::string& args, const std::string& env = "") {
  const std::string command = "env -u TICKWHEEL_ALLOW_NO_TESTS -u PROBE_ALLOW_SKIP " + env +
                              " '" TICKWHEEL_TEST_MAIN_PROBE "' " + args + " 2>&1";
  ProbeRun run;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return run;
  std::array<char, 4096> buffer{};
  std::size_t n = 0;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) run.output.append(buffer.data(), n);
  const int status = pclose(pipe);
  if (WIFEXITED(status)) run.exit_code = WEXITSTATUS(status);
  return run;
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(TestMainTest, ARunWhoseTestsPassPasses) {
  const ProbeRun run = RunProbe("--gtest_filter=Probe.Passes");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(Contains(run.output, "[  PASSED  ] 1 test")) << run.output;
}

// A filter that selects nothing is what CTest runs for a test renamed or
// removed since discovery: GoogleTest alone exits 0 for it.
TEST(TestMainTest, ARunOfNoTestFails) {
  for (const std::string& filter :
       {std::string("Probe.NoSuchTest"), std::string("NoSuchSuite.*"),
        std::string("DISABLED_Probe.IsDisabled")}) {
    const ProbeRun run = RunProbe("--gtest_filter=" + filter);
    EXPECT_EQ(run.exit_code, 1) << filter << "\n" << run.output;
    EXPECT_TRUE(Contains(run.output, "[  FAILED  ] No test ran: the filter \"" + filter + "\""))
        << run.output;
  }
  const ProbeRun zero = RunProbe("--gtest_filter=Probe.NoSuchTest", "TICKWHEEL_ALLOW_NO_TESTS=0");
  EXPECT_EQ(zero.exit_code, 1) << "0 does not allow it\n" << zero.output;
}

TEST(TestMainTest, ARunOfNoTestPassesWhereAllowed) {
  const ProbeRun run = RunProbe("--gtest_filter=Probe.NoSuchTest", "TICKWHEEL_ALLOW_NO_TESTS=1");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(Contains(run.output, "allowed while TICKWHEEL_ALLOW_NO_TESTS is set")) << run.output;
}

TEST(TestMainTest, ListingTheTestsIsNotARun) {
  const ProbeRun all = RunProbe("--gtest_list_tests");
  EXPECT_EQ(all.exit_code, 0) << all.output;
  EXPECT_TRUE(Contains(all.output, "Passes")) << all.output;
  const ProbeRun none = RunProbe("--gtest_list_tests --gtest_filter=Probe.NoSuchTest");
  EXPECT_EQ(none.exit_code, 0) << none.output;
}

TEST(TestMainTest, ASkipFailsUnlessListedAndItsVariableSet) {
  const ProbeRun unlisted = RunProbe("--gtest_filter=Probe.Skips", "PROBE_ALLOW_SKIP=1");
  EXPECT_EQ(unlisted.exit_code, 1) << unlisted.output;
  EXPECT_FALSE(Contains(unlisted.output, "[  SKIPPED ]")) << "CTest would report it skipped\n"
                                                          << unlisted.output;
  EXPECT_TRUE(Contains(unlisted.output, "Probe.Skips was skipped (the probe skips)")) << unlisted.output;

  const ProbeRun listed_unset = RunProbe("--gtest_filter=Probe.SkipsWhereAllowed");
  EXPECT_EQ(listed_unset.exit_code, 1) << listed_unset.output;
  EXPECT_TRUE(Contains(listed_unset.output, "only while PROBE_ALLOW_SKIP=1 is set"))
      << listed_unset.output;

  const ProbeRun listed_set = RunProbe("--gtest_filter=Probe.SkipsWhereAllowed", "PROBE_ALLOW_SKIP=1");
  EXPECT_EQ(listed_set.exit_code, 0) << listed_set.output;
  EXPECT_TRUE(Contains(listed_set.output, "[  SKIPPED ]")) << listed_set.output;
}

// CTest runs disabled tests with --gtest_also_run_disabled_tests.
TEST(TestMainTest, ADisabledTestFails) {
  const ProbeRun run = RunProbe("--gtest_filter=DISABLED_Probe.IsDisabled --gtest_also_run_disabled_tests");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_TRUE(Contains(run.output, "is disabled")) << run.output;
}

TEST(TestMainTest, AFailedSetUpTestSuiteFailsItsTestsWhateverTheList) {
  const ProbeRun run = RunProbe("--gtest_filter=ProbeWithoutItsServer.*", "PROBE_ALLOW_SKIP=1");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_TRUE(Contains(run.output, "did not run: SetUpTestSuite of ProbeWithoutItsServer failed"))
      << run.output;
  EXPECT_FALSE(Contains(run.output, "[  SKIPPED ]")) << run.output;
}

}  // namespace
