// SPDX-License-Identifier: Apache-2.0
#include "tickwheel/executors/bulk_executor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "batch_recorder.h"

namespace tickwheel {
namespace {

using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;
using test_support::BatchRecorder;
using test_support::Iota;
using ::testing::Each;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

class BulkExecutorTest : public ::testing::Test {
 protected:
  ManualClock clock_;
  BatchRecorder<int> recorder_;
};

// go-zero's TestBulkExecutor.
TEST_F(BulkExecutorTest, ExecutesBatchesOfExactlyMaxTasks) {
  BulkExecutor<int> executor(
      recorder_.Callback(),
      {.max_tasks = 10, .interval = minutes(1), .clock = &clock_});
  for (int i = 0; i < 53; ++i) executor.Add(i);
  executor.Wait();
  EXPECT_THAT(recorder_.sizes(), ElementsAre(10, 10, 10, 10, 10, 3));
  EXPECT_THAT(recorder_.tasks(), ElementsAreArray(Iota(53)));
}

// go-zero's TestBulkExecutorFlushInterval.
TEST_F(BulkExecutorTest, ExecutesWhatAccumulatedAfterTheInterval) {
  BulkExecutor<int> executor(
      recorder_.Callback(),
      {.max_tasks = 10, .interval = milliseconds(100), .clock = &clock_});
  for (int i = 0; i < 5; ++i) executor.Add(i);
  clock_.Advance(milliseconds(99));
  EXPECT_THAT(recorder_.sizes(), IsEmpty());
  clock_.Advance(milliseconds(1));
  EXPECT_THAT(recorder_.sizes(), ElementsAre(5));
}

// go-zero's TestBulkExecutorEmpty.
TEST_F(BulkExecutorTest, EmptyExecutorNeverExecutes) {
  {
    BulkExecutor<int> executor(
        recorder_.Callback(),
        {.max_tasks = 10, .interval = milliseconds(1), .clock = &clock_});
    for (int i = 0; i < 100; ++i) clock_.Advance(milliseconds(1));
    executor.Wait();
    EXPECT_FALSE(executor.Flush());
  }
  EXPECT_THAT(recorder_.sizes(), IsEmpty());
}

// go-zero's TestBulkExecutorFlush.
TEST_F(BulkExecutorTest, FlushExecutesWhatIsBuffered) {
  BulkExecutor<int> executor(
      recorder_.Callback(),
      {.max_tasks = 10, .interval = minutes(1), .clock = &clock_});
  for (int i = 0; i < 5; ++i) executor.Add(i);
  EXPECT_TRUE(executor.Flush());
  EXPECT_THAT(recorder_.sizes(), ElementsAre(5));
}

// go-zero's TestBuldExecutorFlushSlowTasks.
TEST_F(BulkExecutorTest, SlowTasksAreAllExecutedByWait) {
  std::atomic<int> executed{0};
  BulkExecutor<int> executor(
      [&](std::vector<int> batch) {
        std::this_thread::sleep_for(milliseconds(20));  // a slow sink
        executed += static_cast<int>(batch.size());
      },
      {.max_tasks = 1000, .clock = &clock_});
  for (int i = 0; i < 1500; ++i) executor.Add(i);
  executor.Flush();
  executor.Wait();
  EXPECT_EQ(executed.load(), 1500);
}

// go-zero's TestPeriodicalExecutor_WaitFast: bulk size 1.
TEST_F(BulkExecutorTest, WaitCoversEveryBatchOfSizeOne) {
  int count = 0;  // written only by batches, which never overlap
  BulkExecutor<int> executor(
      [&](std::vector<int>) {
        std::this_thread::sleep_for(milliseconds(10));
        ++count;
      },
      {.max_tasks = 1, .interval = milliseconds(10), .clock = &clock_});
  for (int i = 0; i < 3; ++i) executor.Add(2);
  executor.Flush();
  executor.Wait();
  EXPECT_EQ(count, 3);
}

TEST_F(BulkExecutorTest, DefaultsAreAThousandTasksAndOneSecond) {
  BulkExecutor<int> executor(recorder_.Callback(), {.clock = &clock_});
  for (int i = 0; i < 999; ++i) executor.Add(i);
  clock_.Advance(milliseconds(999));
  EXPECT_THAT(recorder_.sizes(), IsEmpty());
  clock_.Advance(milliseconds(1));
  EXPECT_THAT(recorder_.sizes(), ElementsAre(999));
  for (int i = 0; i < 1001; ++i) executor.Add(i);
  executor.Wait();
  EXPECT_THAT(recorder_.sizes(), ElementsAre(999, 1000, 1));
}

TEST_F(BulkExecutorTest, RejectsBadOptionsNamingThem) {
  auto message = [&](BulkExecutorOptions options,
                     BulkExecutor<int>::Execute execute) -> std::string {
    try {
      BulkExecutor<int> executor(std::move(execute), std::move(options));
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "no exception";
  };
  EXPECT_EQ(message({.max_tasks = 0}, recorder_.Callback()),
            "tickwheel::BulkExecutor: max_tasks must be positive, got 0");
  EXPECT_EQ(message({.interval = milliseconds(-3)}, recorder_.Callback()),
            "tickwheel::BulkExecutor: interval must be positive, got "
            "-3000000ns");
  EXPECT_EQ(message({}, nullptr),
            "tickwheel::BulkExecutor: execute must not be empty");
}

TEST_F(BulkExecutorTest, TasksMayBeMoveOnly) {
  std::vector<int> seen;
  {
    BulkExecutor<std::unique_ptr<int>> executor(
        [&](std::vector<std::unique_ptr<int>> batch) {
          for (auto& p : batch) seen.push_back(*p);
        },
        {.max_tasks = 2, .clock = &clock_});
    for (int i = 0; i < 5; ++i) executor.Add(std::make_unique<int>(i));
  }
  EXPECT_THAT(seen, ElementsAreArray(Iota(5)));
}

TEST_F(BulkExecutorTest, ThrowingBatchIsReportedAndTheNextOnesRun) {
  std::atomic<int> errors{0};
  BulkExecutor<int> executor(
      [&](std::vector<int> batch) {
        const bool bad = batch[0] == 0;
        recorder_.Record(std::move(batch));
        if (bad) throw std::runtime_error("bad batch");
      },
      {.max_tasks = 3, .clock = &clock_, .on_error = [&](std::exception_ptr) {
         ++errors;
       }});
  for (int i = 0; i < 9; ++i) executor.Add(i);
  executor.Wait();
  EXPECT_THAT(recorder_.tasks(), ElementsAreArray(Iota(9)));
  EXPECT_EQ(errors.load(), 1);
  EXPECT_EQ(executor.callback_errors(), 1u);
}

// go-zero's TestPeriodicalExecutor_Deadlock: every Add hands a batch over.
TEST(BulkExecutorRealTimeTest, HundredThousandAddsOfBulkSizeOneDoNotDeadlock) {
  constexpr int kAdds = 100'000;
  std::atomic<int> executed{0};
  BulkExecutor<int> executor(
      [&](std::vector<int> b) { executed += int(b.size()); },
      {.max_tasks = 1, .interval = milliseconds(1)});
  for (int i = 0; i < kAdds; ++i) executor.Add(1);
  executor.Wait();
  EXPECT_EQ(executed.load(), kAdds);
}

}  // namespace
}  // namespace tickwheel
