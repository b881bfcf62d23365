// SPDX-License-Identifier: Apache-2.0
#include "tickwheel/executors/less_executor.h"

#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

namespace tickwheel {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;

// go-zero's TestLessExecutor_DoOrDiscard, on a manual clock.
TEST(LessExecutorTest, RunsAtMostOncePerThreshold) {
  ManualClock clock;
  LessExecutor executor(minutes(1), {.clock = &clock});
  int runs = 0;
  EXPECT_TRUE(executor.DoOrDiscard([&] { ++runs; }));
  EXPECT_FALSE(executor.DoOrDiscard([&] { ++runs; }));
  clock.Advance(minutes(1) - Duration(1));
  EXPECT_FALSE(executor.DoOrDiscard([&] { ++runs; }));
  clock.Advance(Duration(1));
  EXPECT_TRUE(executor.DoOrDiscard([&] { ++runs; }));
  EXPECT_FALSE(executor.DoOrDiscard([&] { ++runs; }));
  clock.Advance(minutes(1) + seconds(30));
  EXPECT_TRUE(executor.DoOrDiscard([&] { ++runs; }));
  EXPECT_EQ(runs, 3);
}

// A clock whose Now() returns only when `parties` threads have called it, so
// that they all go on to check-and-claim at the same instant; each such
// rendezvous moves time on by `step`.
class RendezvousClock final : public Clock {
 public:
  RendezvousClock(int parties, Duration step)
      : barrier_(parties, Step{this, step}) {}
  TimePoint Now() const override {
    barrier_.arrive_and_wait();
    return TimePoint(Duration(now_ns_.load()));
  }
  std::unique_ptr<Sleeper> NewSleeper() override { return nullptr; }

 private:
  struct Step {
    void operator()() noexcept { clock->now_ns_ += step.count(); }
    RendezvousClock* clock;
    Duration step;
  };
  std::atomic<std::int64_t> now_ns_{std::chrono::hours(1) / Duration(1)};
  mutable std::barrier<Step> barrier_;
};

// go-zero checks and sets in two steps, so callers at the same moment can
// all run; here exactly one of them does, round after round.
TEST(LessExecutorTest, OfManyThreadsAtOnceExactlyOneRuns) {
  constexpr int kThreads = 4;
  constexpr int kRounds = 500;
  RendezvousClock clock(kThreads, seconds(1));
  LessExecutor executor(seconds(1), {.clock = &clock});
  std::atomic<int> runs{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int round = 0; round < kRounds; ++round) {
        executor.DoOrDiscard([&] { ++runs; });
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(runs.load(), kRounds);
}

TEST(LessExecutorTest, AThrowPropagatesAndTheRunStillCounts) {
  ManualClock clock;
  LessExecutor executor(seconds(1), {.clock = &clock});
  EXPECT_THROW(executor.DoOrDiscard([] { throw std::runtime_error("x"); }),
               std::runtime_error);
  EXPECT_FALSE(executor.DoOrDiscard([] {}));
}

TEST(LessExecutorTest, RejectsANonPositiveThreshold) {
  try {
    LessExecutor executor(Duration::zero());
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(
        e.what(),
        "tickwheel::LessExecutor: threshold must be positive, got 0ns");
  }
}

}  // namespace
}  // namespace tickwheel
