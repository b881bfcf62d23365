// SPDX-License-Identifier: Apache-2.0
#include "tickwheel/executors/delay_executor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <thread>
#include <vector>

namespace tickwheel {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;

constexpr Duration kDelay = milliseconds(10);

class DelayExecutorTest : public ::testing::Test {
 protected:
  ManualClock clock_;
  std::atomic<int> runs_{0};
};

// go-zero's TestDelayExecutor.
TEST_F(DelayExecutorTest, HundredTriggersRunFnOnce) {
  DelayExecutor executor([&] { ++runs_; }, kDelay, {.clock = &clock_});
  EXPECT_TRUE(executor.Trigger());
  for (int i = 1; i < 100; ++i) EXPECT_FALSE(executor.Trigger());
  clock_.Advance(kDelay - Duration(1));
  EXPECT_EQ(runs_.load(), 0);  // never early
  clock_.Advance(Duration(1));
  EXPECT_EQ(runs_.load(), 1);
  clock_.Advance(10 * kDelay);
  EXPECT_EQ(runs_.load(), 1);  // never twice
}

TEST_F(DelayExecutorTest, DelayCountsFromTheFirstTrigger) {
  DelayExecutor executor([&] { ++runs_; }, kDelay, {.clock = &clock_});
  executor.Trigger();
  clock_.Advance(kDelay / 2);
  EXPECT_FALSE(executor.Trigger());
  clock_.Advance(kDelay / 2);
  EXPECT_EQ(runs_.load(), 1);
}

TEST_F(DelayExecutorTest, TriggerAfterARunSchedulesAnother) {
  DelayExecutor executor([&] { ++runs_; }, kDelay, {.clock = &clock_});
  executor.Trigger();
  clock_.Advance(kDelay);
  EXPECT_TRUE(executor.Trigger());
  clock_.Advance(kDelay - Duration(1));
  EXPECT_EQ(runs_.load(), 1);
  clock_.Advance(Duration(1));
  EXPECT_EQ(runs_.load(), 2);
}

TEST_F(DelayExecutorTest,
       TriggerDuringARunSchedulesTheNextRunNeverOverlapping) {
  std::atomic<int> running{0};
  std::atomic<bool> overlapped{false};
  std::atomic<bool> retriggered{false};
  DelayExecutor* self = nullptr;
  DelayExecutor executor(
      [&] {
        if (++running > 1) overlapped = true;
        // Re-arms itself while running, like a debounced save that saw a
        // change arrive during the save.
        if (runs_.fetch_add(1) == 0) retriggered = self->Trigger();
        --running;
      },
      kDelay, {.clock = &clock_});
  self = &executor;
  executor.Trigger();
  clock_.Advance(kDelay);
  EXPECT_EQ(runs_.load(), 1);
  EXPECT_TRUE(retriggered.load());
  clock_.Advance(kDelay - Duration(1));
  EXPECT_EQ(runs_.load(), 1);
  clock_.Advance(Duration(1));
  EXPECT_EQ(runs_.load(), 2);
  EXPECT_FALSE(overlapped.load());
}

TEST_F(DelayExecutorTest, ZeroDelayRunsAtOnceOnItsThread) {
  std::atomic<bool> on_other_thread{false};
  const auto test_thread = std::this_thread::get_id();
  DelayExecutor executor(
      [&] {
        on_other_thread = std::this_thread::get_id() != test_thread;
        ++runs_;
      },
      Duration::zero(), {.clock = &clock_});
  executor.Trigger();
  clock_.Advance(Duration(1));  // returns once the thread has finished
  EXPECT_EQ(runs_.load(), 1);
  EXPECT_TRUE(on_other_thread.load());
}

// Now() + delay once overflowed, so the longest delay ran at once.
TEST_F(DelayExecutorTest, LongestDelayNeverRunsUntilDestruction) {
  {
    DelayExecutor executor([&] { ++runs_; }, Duration::max(), {.clock = &clock_});
    EXPECT_TRUE(executor.Trigger());
    clock_.Advance(std::chrono::hours(24 * 365));
    EXPECT_EQ(runs_.load(), 0);
    EXPECT_FALSE(executor.Trigger());  // still pending
  }
  EXPECT_EQ(runs_.load(), 1);
}

TEST_F(DelayExecutorTest, DestructionRunsAPendingTriggerAtOnce) {
  {
    DelayExecutor executor([&] { ++runs_; }, seconds(3600), {.clock = &clock_});
    executor.Trigger();
  }
  EXPECT_EQ(runs_.load(), 1);
}

TEST_F(DelayExecutorTest, DestructionIgnoresTriggersFromTheLastRun) {
  {
    DelayExecutor* self = nullptr;
    DelayExecutor executor(
        [&] {
          ++runs_;
          self->Trigger();  // would loop forever if honoured
        },
        seconds(3600), {.clock = &clock_});
    self = &executor;
    executor.Trigger();
  }
  EXPECT_EQ(runs_.load(), 1);
}

// The throw is counted too (callback_errors), before on_error sees it.
TEST_F(DelayExecutorTest, ThrowingFnIsReportedAndLaterTriggersStillRun) {
  std::atomic<int> errors{0};
  std::atomic<std::uint64_t> counted{0};  // callback_errors() in on_error
  const DelayExecutor* self = nullptr;    // set before the first run
  DelayExecutor executor(
      [&] {
        if (++runs_ == 1) throw std::runtime_error("first run fails");
      },
      kDelay,
      {.clock = &clock_, .on_error = [&](std::exception_ptr) {
         counted = self->callback_errors();
         ++errors;
       }});
  self = &executor;
  EXPECT_EQ(executor.callback_errors(), 0u);
  executor.Trigger();
  clock_.Advance(kDelay);
  EXPECT_EQ(errors.load(), 1);
  EXPECT_EQ(counted.load(), 1u);
  EXPECT_EQ(executor.callback_errors(), 1u);
  executor.Trigger();
  clock_.Advance(kDelay);
  EXPECT_EQ(runs_.load(), 2);
  EXPECT_EQ(errors.load(), 1);
  EXPECT_EQ(executor.callback_errors(), 1u);
}

TEST_F(DelayExecutorTest, ManyThreadsTriggeringAtOnceGetOneRun) {
  DelayExecutor executor([&] { ++runs_; }, kDelay, {.clock = &clock_});
  std::atomic<int> scheduled{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) scheduled += executor.Trigger() ? 1 : 0;
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(scheduled.load(), 1);
  clock_.Advance(kDelay);
  EXPECT_EQ(runs_.load(), 1);
}

TEST_F(DelayExecutorTest, RejectsBadArguments) {
  try {
    DelayExecutor executor([] {}, milliseconds(-1));
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(),
                HasSubstr("delay must not be negative, got -1000000ns"));
  }
  EXPECT_THROW(DelayExecutor(nullptr, kDelay), std::invalid_argument);
}

}  // namespace
}  // namespace tickwheel
