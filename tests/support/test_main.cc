// SPDX-License-Identifier: Apache-2.0
// main() of every GoogleTest executable of the project, in place of
// gtest_main: the tests run with a listener that fails every test that did
// not run and may not skip.
//
// A test reported skipped (GTEST_SKIP, or not run because its suite's
// SetUpTestSuite failed) or disabled (DISABLED_; CTest runs those too,
// cmake/TickwheelTesting.cmake) fails, unless tests/allowed_skips.txt lists
// it and the environment variable its line names is set. A test whose
// suite's SetUpTestSuite failed fails whatever the list says. A failed test
// is printed "[  FAILED  ]", not "[  SKIPPED ]", so CTest reports it failed
// (its default SKIP_REGULAR_EXPRESSION would report a skip whatever the
// exit code); an allowed skip stays "[  SKIPPED ]", which CTest reports as
// Skipped.
//
// A run in which no test ran at all (a --gtest_filter that matches nothing:
// a test renamed or removed since CTest discovered it, a typo in a filter)
// fails with exit code 1, since GoogleTest itself reports it as passing;
// unless TICKWHEEL_ALLOW_NO_TESTS is set (to anything but 0), for a run that
// selects nothing on purpose. Listing the tests (--gtest_list_tests, which
// gtest_discover_tests runs) is not a run.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace {

// One line of tests/allowed_skips.txt.
struct AllowedSkip {
  std::string pattern;   // a test's full name; '*' matches any characters
  std::string variable;  // the skip is allowed while this is set (and not "0")
  std::string reason;
};

bool Matches(std::string_view pattern, std::string_view name) {
  if (pattern.empty()) return name.empty();
  if (pattern[0] == '*') {
    for (std::size_t i = 0; i <= name.size(); ++i) {
      if (Matches(pattern.substr(1), name.substr(i))) return true;
    }
    return false;
  }
  return !name.empty() && pattern[0] == name[0] && Matches(pattern.substr(1), name.substr(1));
}

bool IsSet(const std::string& variable) {
  const char* value = std::getenv(variable.c_str());
  return value != nullptr && *value != '\0' && std::string_view(value) != "0";
}

class SkipJudge : public testing::EmptyTestEventListener {
 public:
  explicit SkipJudge(std::string list_path) : list_path_(std::move(list_path)) { Read(); }

  // Runs before the result printer's OnTestEnd (end events go to listeners
  // in reverse order), so a failure added here is printed with the test.
  void OnTestEnd(const testing::TestInfo& info) override {
    const testing::TestSuite* suite = testing::UnitTest::GetInstance()->current_test_suite();
    const std::string suite_name = info.test_suite_name();
    const bool disabled = suite_name.rfind("DISABLED_", 0) == 0 ||
                          std::string_view(info.name()).rfind("DISABLED_", 0) == 0;
    const bool skipped = info.result()->Skipped();
    if (!disabled && !skipped) return;
    const std::string name = suite_name + "." + info.name();
    if (skipped && suite != nullptr && suite->ad_hoc_test_result().Failed()) {
      Fail(info, name + " did not run: SetUpTestSuite of " + suite_name + " failed (above)");
      return;
    }
    std::string what = disabled ? "is disabled" : "was skipped";
    const std::string message = SkipMessage(*info.result());
    if (!message.empty()) what += " (" + message + ")";
    const AllowedSkip* entry = nullptr;
    for (const AllowedSkip& e : list_) {
      if (Matches(e.pattern, name)) entry = &e;
    }
    if (entry != nullptr && IsSet(entry->variable)) {
      std::printf("%s %s, allowed by %s while %s is set: %s\n", name.c_str(), what.c_str(),
                  list_path_.c_str(), entry->variable.c_str(), entry->reason.c_str());
      return;
    }
    if (entry != nullptr) {
      Fail(info, name + " " + what + ". " + list_path_ + " allows it only while " +
                     entry->variable + "=1 is set: " + entry->reason);
    } else {
      Fail(info, name + " " + what + ". A test may skip only if " + list_path_ +
                     " lists it, with its reason and the variable that allows it." +
                     (error_.empty() ? "" : " (" + error_ + ")"));
    }
  }

 private:
  void Read() {
    std::ifstream in(list_path_);
    if (!in) {
      error_ = "cannot read " + list_path_;
      return;
    }
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
      if (line.empty() || line[0] == '#') continue;
      std::istringstream fields(line);
      AllowedSkip entry;
      fields >> entry.pattern >> entry.variable;
      std::getline(fields >> std::ws, entry.reason);
      if (entry.reason.empty()) {
        error_ = list_path_ + ":" + std::to_string(number) +
                 ": expected `<test> <VARIABLE> <reason>`, got: " + line;
        continue;
      }
      list_.push_back(entry);
    }
  }

  // What the test said when it skipped, if anything.
  static std::string SkipMessage(const testing::TestResult& result) {
    for (int i = 0; i < result.total_part_count(); ++i) {
      const testing::TestPartResult& part = result.GetTestPartResult(i);
      if (part.skipped() && part.message() != nullptr && *part.message() != '\0') {
        return part.message();
      }
    }
    return "";
  }

  static void Fail(const testing::TestInfo& info, const std::string& why) {
    const char* file = info.file() != nullptr ? info.file() : __FILE__;
    ADD_FAILURE_AT(file, info.line()) << why;
  }

  const std::string list_path_;
  std::vector<AllowedSkip> list_;
  std::string error_;
};

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  testing::UnitTest& unit = *testing::UnitTest::GetInstance();
  unit.listeners().Append(new SkipJudge(TICKWHEEL_ALLOWED_SKIPS));
  const int status = RUN_ALL_TESTS();
  if (status != 0 || GTEST_FLAG_GET(list_tests) || unit.test_to_run_count() > 0) return status;
  const std::string filter = GTEST_FLAG_GET(filter);
  if (IsSet("TICKWHEEL_ALLOW_NO_TESTS")) {
    std::printf("No test ran (filter \"%s\"), allowed while TICKWHEEL_ALLOW_NO_TESTS is set\n",
                filter.c_str());
    return 0;
  }
  std::fprintf(stderr,
               "[  FAILED  ] No test ran: the filter \"%s\" selects no test of %s. A run that "
               "runs nothing fails (TICKWHEEL_ALLOW_NO_TESTS=1 allows it).\n",
               filter.c_str(), argc > 0 ? argv[0] : "this executable");
  return 1;
}
