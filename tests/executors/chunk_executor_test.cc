// SPDX-License-Identifier: Apache-2.0
#include "tickwheel/executors/chunk_executor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include "batch_recorder.h"

namespace tickwheel {
namespace {

using std::chrono::milliseconds;
using std::chrono::minutes;
using test_support::BatchRecorder;
using test_support::Iota;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::IsEmpty;

class ChunkExecutorTest : public ::testing::Test {
 protected:
  ManualClock clock_;
  BatchRecorder<int> recorder_;
};

// go-zero's TestChunkExecutor.
TEST_F(ChunkExecutorTest, ExecutesBatchesOfExactlyMaxBytes) {
  ChunkExecutor<int> executor(
      recorder_.Callback(),
      {.max_bytes = 10, .interval = minutes(1), .clock = &clock_});
  for (int i = 0; i < 50; ++i) executor.Add(i, 1);
  executor.Wait();
  EXPECT_THAT(recorder_.sizes(), ElementsAre(10, 10, 10, 10, 10));
  EXPECT_THAT(recorder_.tasks(), ElementsAreArray(Iota(50)));
}

TEST_F(ChunkExecutorTest, BatchOvershootsByAtMostItsLastTask) {
  ChunkExecutor<int> executor(
      recorder_.Callback(),
      {.max_bytes = 10, .interval = minutes(1), .clock = &clock_});
  executor.Add(0, 4);
  executor.Add(1, 4);
  executor.Add(2, 4);  // 12 bytes: flushed
  executor.Add(3, 9);
  executor.Add(4, 100);  // 109 bytes: flushed
  executor.Add(5, 0);
  executor.Wait();
  EXPECT_THAT(recorder_.sizes(), ElementsAre(3, 2, 1));
}

// go-zero's TestChunkExecutorFlushInterval.
TEST_F(ChunkExecutorTest, ExecutesWhatAccumulatedAfterTheInterval) {
  ChunkExecutor<int> executor(
      recorder_.Callback(),
      {.max_bytes = 10, .interval = milliseconds(100), .clock = &clock_});
  for (int i = 0; i < 5; ++i) executor.Add(i, 1);
  clock_.Advance(milliseconds(99));
  EXPECT_THAT(recorder_.sizes(), IsEmpty());
  clock_.Advance(milliseconds(1));
  EXPECT_THAT(recorder_.sizes(), ElementsAre(5));
}

// go-zero's TestChunkExecutorEmpty.
TEST_F(ChunkExecutorTest, EmptyExecutorNeverExecutes) {
  {
    ChunkExecutor<int> executor(
        recorder_.Callback(),
        {.max_bytes = 10, .interval = milliseconds(1), .clock = &clock_});
    for (int i = 0; i < 100; ++i) clock_.Advance(milliseconds(1));
    executor.Wait();
  }
  EXPECT_THAT(recorder_.sizes(), IsEmpty());
}

// go-zero's TestChunkExecutorFlush.
TEST_F(ChunkExecutorTest, FlushExecutesWhatIsBuffered) {
  ChunkExecutor<int> executor(
      recorder_.Callback(),
      {.max_bytes = 10, .interval = minutes(1), .clock = &clock_});
  for (int i = 0; i < 5; ++i) executor.Add(i, 1);
  EXPECT_TRUE(executor.Flush());
  EXPECT_THAT(recorder_.sizes(), ElementsAre(5));
}

TEST_F(ChunkExecutorTest, DefaultsAreOneMebibyteAndOneSecond) {
  ChunkExecutor<int> executor(recorder_.Callback(), {.clock = &clock_});
  executor.Add(0, 1024 * 1024 - 1);
  clock_.Advance(milliseconds(999));
  EXPECT_THAT(recorder_.sizes(), IsEmpty());
  clock_.Advance(milliseconds(1));
  EXPECT_THAT(recorder_.sizes(), ElementsAre(1));
  executor.Add(1, 1024 * 1024 - 1);
  executor.Add(2, 1);  // exactly 1 MiB: flushed without a tick
  executor.Add(3, 1);
  executor.Wait();
  EXPECT_THAT(recorder_.sizes(), ElementsAre(1, 2, 1));
}

TEST_F(ChunkExecutorTest, HugeSizesSaturateInsteadOfWrapping) {
  ChunkExecutor<int> executor(
      recorder_.Callback(),
      {.max_bytes = SIZE_MAX, .interval = minutes(1), .clock = &clock_});
  executor.Add(0, SIZE_MAX - 1);
  executor.Add(1, 5);  // would wrap to 3 bytes
  executor.Add(2, 1);
  executor.Wait();
  EXPECT_THAT(recorder_.sizes(), ElementsAre(2, 1));
}

// A batch whose `execute` throws is counted and reported, and the next
// batches run.
TEST_F(ChunkExecutorTest, ThrowingBatchIsCountedReportedAndTheNextOnesRun) {
  int errors = 0;  // Flush and Wait run the batches on this thread
  ChunkExecutor<int> executor(
      [&](std::vector<int> batch) {
        const bool bad = batch[0] % 2 == 0;
        recorder_.Record(std::move(batch));
        if (bad) throw std::runtime_error("bad chunk");
      },
      {.max_bytes = 100, .interval = minutes(1), .clock = &clock_,
       .on_error = [&](std::exception_ptr) { ++errors; }});
  for (int i = 0; i < 4; ++i) {
    executor.Add(i, 1);
    EXPECT_TRUE(executor.Flush());
  }
  executor.Wait();
  EXPECT_THAT(recorder_.tasks(), ElementsAreArray(Iota(4)));
  EXPECT_EQ(errors, 2);
  EXPECT_EQ(executor.callback_errors(), 2u);
}

TEST_F(ChunkExecutorTest, RejectsBadOptionsNamingThem) {
  EXPECT_THROW(ChunkExecutor<int>(recorder_.Callback(), {.max_bytes = 0}),
               std::invalid_argument);
  try {
    ChunkExecutor<int> executor(recorder_.Callback(),
                                {.interval = Duration::zero()});
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(
        e.what(),
        "tickwheel::ChunkExecutor: interval must be positive, got 0ns");
  }
  EXPECT_THROW(ChunkExecutor<int>(nullptr), std::invalid_argument);
}

}  // namespace
}  // namespace tickwheel
