// SPDX-License-Identifier: Apache-2.0
#include "tickwheel/executors/periodical_executor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "batch_recorder.h"

namespace tickwheel {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using test_support::BatchRecorder;
using test_support::Iota;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr Duration kInterval = milliseconds(10);

// go-zero's test container: full once it holds more than 10 tasks.
class TestContainer {
 public:
  using Task = int;
  using Batch = std::vector<int>;
  static constexpr std::size_t kThreshold = 10;

  explicit TestContainer(std::function<void(std::vector<int>)> execute)
      : execute_(std::move(execute)) {}

  bool AddTask(int task) {
    tasks_.push_back(task);
    return tasks_.size() > kThreshold;
  }
  Batch RemoveAll() noexcept { return std::exchange(tasks_, {}); }
  void Execute(Batch batch) const { execute_(std::move(batch)); }
  std::size_t size() const { return tasks_.size(); }

 private:
  const std::function<void(std::vector<int>)> execute_;
  std::vector<int> tasks_;
};

using Executor = PeriodicalExecutor<TestContainer>;

class PeriodicalExecutorTest : public ::testing::Test {
 protected:
  PeriodicalExecutorOptions Options() { return {.clock = &clock_}; }

  ManualClock clock_;
  BatchRecorder<int> recorder_;
};

TEST_F(PeriodicalExecutorTest, RejectsANonPositiveInterval) {
  try {
    Executor executor(Duration::zero(), TestContainer(recorder_.Callback()));
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("interval must be positive, got 0ns"));
  }
}

TEST_F(PeriodicalExecutorTest, SyncRunsFnOnTheContainerAndReturnsItsResult) {
  Executor executor(seconds(1), TestContainer(recorder_.Callback()), Options());
  executor.Add(1);
  executor.Add(2);
  EXPECT_EQ(executor.Sync([](TestContainer& c) { return c.size(); }), 2u);
}

TEST_F(PeriodicalExecutorTest, FlushesEveryIntervalAfterTheFirstAdd) {
  Executor executor(kInterval, TestContainer(recorder_.Callback()), Options());
  EXPECT_FALSE(executor.flusher_running());
  executor.Add(1);
  EXPECT_TRUE(executor.flusher_running());
  clock_.Advance(kInterval - Duration(1));
  EXPECT_THAT(recorder_.sizes(), IsEmpty());
  clock_.Advance(Duration(1));
  EXPECT_THAT(recorder_.tasks(), ElementsAre(1));
  executor.Add(2);
  executor.Add(3);
  clock_.Advance(kInterval);
  EXPECT_THAT(recorder_.sizes(), ElementsAre(1, 2));
}

// go-zero's TestPeriodicalExecutor_QuitGoroutine, and the restart after it.
TEST_F(PeriodicalExecutorTest, FlusherQuitsAfterTenIdleIntervalsAndRestarts) {
  Executor executor(kInterval, TestContainer(recorder_.Callback()), Options());
  executor.Add(1);
  clock_.Advance(kInterval);  // runs the batch
  EXPECT_THAT(recorder_.tasks(), ElementsAre(1));
  for (int i = 0; i < 9; ++i) clock_.Advance(kInterval);
  EXPECT_TRUE(executor.flusher_running());  // idle for 9 intervals
  clock_.Advance(kInterval);
  EXPECT_FALSE(executor.flusher_running());  // idle for 10: gone

  executor.Add(2);
  EXPECT_TRUE(executor.flusher_running());
  clock_.Advance(kInterval);
  EXPECT_THAT(recorder_.tasks(), ElementsAre(1, 2));
}

TEST_F(PeriodicalExecutorTest, FullContainerIsExecutedWithoutWaitingForATick) {
  Executor executor(seconds(60), TestContainer(recorder_.Callback()),
                    Options());
  for (int i = 0; i < 11; ++i) executor.Add(i);  // the 11th fills it
  // The flusher took the batch before Add returned; Wait (which would flush
  // anything left) finds the container empty and waits for that batch.
  EXPECT_EQ(executor.Sync([](TestContainer& c) { return c.size(); }), 0u);
  executor.Wait();
  EXPECT_THAT(recorder_.sizes(), ElementsAre(11));
}

// Now() + interval, and the idle check's 10 * interval, once overflowed, so
// the longest interval flushed at once.
TEST_F(PeriodicalExecutorTest, LongestIntervalFlushesOnlyFullBatchesAndOnWait) {
  Executor executor(Duration::max(), TestContainer(recorder_.Callback()), Options());
  executor.Add(0);
  clock_.Advance(std::chrono::hours(24 * 365));
  EXPECT_THAT(recorder_.sizes(), IsEmpty());
  EXPECT_TRUE(executor.flusher_running());
  for (int i = 1; i < 11; ++i) executor.Add(i);  // the 11th fills it
  executor.Add(11);
  executor.Wait();
  EXPECT_THAT(recorder_.sizes(), ElementsAre(11, 1));
}

TEST_F(PeriodicalExecutorTest, TickAfterAFullBatchIsSkipped) {
  Executor executor(kInterval, TestContainer(recorder_.Callback()), Options());
  for (int i = 0; i < 11; ++i) executor.Add(i);  // handed over
  executor.Add(11);
  clock_.Advance(kInterval);  // a full batch ran since the last tick: skip
  EXPECT_THAT(recorder_.sizes(), ElementsAre(11));
  clock_.Advance(kInterval);
  EXPECT_THAT(recorder_.sizes(), ElementsAre(11, 1));
}

// go-zero's TestPeriodicalExecutor_Bulk: full batches, ticks and idle quits
// interleaved; every task runs once, in order.
TEST_F(PeriodicalExecutorTest, ExecutesEveryTaskOnceInOrder) {
  Executor executor(kInterval, TestContainer(recorder_.Callback()), Options());
  for (int i = 0; i < 100; ++i) {
    if (i % 10 == 5) {
      for (int j = 0; j < 2 * 10; ++j) clock_.Advance(kInterval);
    }
    executor.Add(i);
  }
  clock_.Advance(kInterval);
  clock_.Advance(kInterval);
  clock_.Advance(kInterval);
  EXPECT_THAT(recorder_.tasks(), ElementsAreArray(Iota(100)));
}

// go-zero's TestPeriodicalExecutor_Panic.
// Each throwing batch is counted too (callback_errors), before on_error
// sees it.
TEST_F(PeriodicalExecutorTest, ThrowingBatchIsReportedAndLosesNoOtherTask) {
  std::atomic<int> errors{0};
  std::string message;
  std::atomic<std::uint64_t> counted{0};  // callback_errors() in on_error
  const Executor* self = nullptr;         // set before any batch runs
  auto options = Options();
  options.on_error = [&](std::exception_ptr e) {
    counted = self->callback_errors();
    try {
      std::rethrow_exception(e);
    } catch (const std::runtime_error& error) {
      message = error.what();
    }
    ++errors;
  };
  Executor executor(kInterval, TestContainer([&](std::vector<int> batch) {
                      const bool first = batch[0] == 0;
                      recorder_.Record(std::move(batch));
                      if (first) throw std::runtime_error("test");
                    }),
                    std::move(options));
  self = &executor;
  EXPECT_EQ(executor.callback_errors(), 0u);
  for (int i = 0; i < 30; ++i) executor.Add(i);
  clock_.Advance(kInterval);
  clock_.Advance(kInterval);
  EXPECT_THAT(recorder_.tasks(), ElementsAreArray(Iota(30)));
  EXPECT_EQ(errors.load(), 1);
  EXPECT_EQ(message, "test");
  EXPECT_EQ(counted.load(), 1u);
  EXPECT_EQ(executor.callback_errors(), 1u);

  executor.Add(30);  // the executor goes on
  executor.Wait();
  EXPECT_THAT(recorder_.tasks(), ElementsAreArray(Iota(31)));
  EXPECT_EQ(executor.callback_errors(), 1u);
}

// go-zero's TestPeriodicalExecutor_FlushPanic.
TEST_F(PeriodicalExecutorTest, FlushOfAThrowingBatchReportsAndReturns) {
  int errors = 0;
  auto options = Options();
  options.on_error = [&](std::exception_ptr) { ++errors; };
  Executor executor(kInterval, TestContainer([&](std::vector<int> batch) {
                      recorder_.Record(std::move(batch));
                      throw std::runtime_error("flush panic");
                    }),
                    std::move(options));
  for (int i = 0; i < 8; ++i) executor.Add(i);
  EXPECT_TRUE(executor.Flush());
  EXPECT_THAT(recorder_.tasks(), ElementsAreArray(Iota(8)));
  EXPECT_EQ(errors, 1);
  EXPECT_EQ(executor.callback_errors(), 1u);
}

TEST_F(PeriodicalExecutorTest, WithoutAHandlerAThrowIsWrittenToStderr) {
  Executor executor(kInterval, TestContainer([](std::vector<int>) {
                      throw std::runtime_error("disk full");
                    }),
                    Options());
  executor.Add(1);
  ::testing::internal::CaptureStderr();
  executor.Flush();
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(err, HasSubstr("PeriodicalExecutor"));
  EXPECT_THAT(err, HasSubstr("disk full"));
  EXPECT_EQ(executor.callback_errors(), 1u);  // counted all the same
}

TEST_F(PeriodicalExecutorTest,
       FlushRunsOnTheCallerAndSaysWhetherItRanAnything) {
  std::thread::id ran_on;
  Executor executor(seconds(60), TestContainer([&](std::vector<int> batch) {
                      ran_on = std::this_thread::get_id();
                      recorder_.Record(std::move(batch));
                    }),
                    Options());
  EXPECT_FALSE(executor.Flush());
  executor.Add(1);
  EXPECT_TRUE(executor.Flush());
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  EXPECT_FALSE(executor.Flush());
  EXPECT_THAT(recorder_.sizes(), ElementsAre(1));
}

TEST_F(PeriodicalExecutorTest, DestructionExecutesWhatIsLeft) {
  {
    Executor executor(seconds(60), TestContainer(recorder_.Callback()),
                      Options());
    for (int i = 0; i < 25; ++i) executor.Add(i);
  }
  EXPECT_THAT(recorder_.tasks(), ElementsAreArray(Iota(25)));
}

TEST_F(PeriodicalExecutorTest, NothingKeepsADestroyedExecutorAlive) {
  auto token = std::make_shared<int>(0);
  std::weak_ptr<int> watch = token;
  {
    Executor executor(kInterval,
                      TestContainer([token](std::vector<int>) { ++*token; }),
                      Options());
    token.reset();
    executor.Add(1);
    clock_.Advance(kInterval);
    EXPECT_FALSE(watch.expired());
  }
  // No registry, no detached thread: the container and its callback are gone.
  EXPECT_TRUE(watch.expired());
}

TEST_F(PeriodicalExecutorTest, AddFromInsideABatchDoesNotDeadlock) {
  Executor* self = nullptr;
  Executor executor(seconds(60), TestContainer([&](std::vector<int> batch) {
                      // The first batch, on the flusher thread, fills the
                      // container again.
                      if (batch[0] == 0) {
                        for (int i = 100; i < 111; ++i) self->Add(i);
                      }
                      recorder_.Record(std::move(batch));
                    }),
                    Options());
  self = &executor;
  for (int i = 0; i < 11; ++i) executor.Add(i);
  executor.Wait();  // the first batch has run: its adds happened before
  executor.Wait();
  std::vector<int> expected = Iota(11);
  for (int i = 100; i < 111; ++i) expected.push_back(i);
  EXPECT_THAT(recorder_.tasks(), ElementsAreArray(expected));
}

TEST_F(PeriodicalExecutorTest, FlushOrWaitFromInsideABatchThrowsLogicError) {
  Executor* self = nullptr;
  std::vector<std::string> errors;
  Executor executor(seconds(60), TestContainer([&](std::vector<int>) {
                      try {
                        self->Flush();
                      } catch (const std::logic_error& e) {
                        errors.push_back(e.what());
                      }
                      try {
                        self->Wait();
                      } catch (const std::logic_error& e) {
                        errors.push_back(e.what());
                      }
                    }),
                    Options());
  self = &executor;
  executor.Add(1);
  executor.Flush();
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_THAT(errors[0], HasSubstr("Flush called from inside"));
  EXPECT_THAT(errors[1], HasSubstr("Wait called from inside"));
}

// A Flush on another thread must wait while the flusher runs an earlier
// batch, and then run after it.
TEST_F(PeriodicalExecutorTest, BatchesDoNotOverlapAndRunInOrder) {
  std::mutex mutex;
  std::condition_variable cv;
  bool first_started = false;
  bool release_first = false;
  std::vector<std::string> events;
  Executor executor(seconds(60), TestContainer([&](std::vector<int> batch) {
                      std::unique_lock lock(mutex);
                      events.push_back("start " + std::to_string(batch[0]));
                      if (batch[0] == 0) {
                        first_started = true;
                        cv.notify_all();
                        cv.wait(lock, [&] { return release_first; });
                      }
                      events.push_back("end " + std::to_string(batch[0]));
                    }),
                    Options());
  for (int i = 0; i < 11; ++i) executor.Add(i);  // handed to the flusher
  {
    std::unique_lock lock(mutex);
    cv.wait(lock, [&] { return first_started; });
  }
  executor.Add(50);
  std::thread flusher([&] { executor.Flush(); });
  // Wait until that Flush has taken its batch; it must now be waiting.
  while (executor.Sync([](TestContainer& c) { return c.size(); }) != 0) {
    std::this_thread::yield();
  }
  {
    std::lock_guard lock(mutex);
    release_first = true;
  }
  cv.notify_all();
  flusher.join();
  executor.Wait();
  EXPECT_THAT(events, ElementsAre("start 0", "end 0", "start 50", "end 50"));
}

TEST_F(PeriodicalExecutorTest, ConcurrentBatchesOverlapWhenAsked) {
  std::mutex mutex;
  std::condition_variable cv;
  bool first_started = false;
  bool second_started = false;
  bool overlapped = false;
  auto options = Options();
  options.concurrent_batches = true;
  Executor executor(seconds(60), TestContainer([&](std::vector<int> batch) {
                      std::unique_lock lock(mutex);
                      if (batch[0] == 0) {
                        first_started = true;
                        cv.notify_all();
                        // Generous: only a broken executor takes this long.
                        overlapped = cv.wait_for(
                            lock, seconds(30), [&] { return second_started; });
                      } else {
                        second_started = true;
                        cv.notify_all();
                      }
                    }),
                    std::move(options));
  for (int i = 0; i < 11; ++i) executor.Add(i);
  {
    std::unique_lock lock(mutex);
    cv.wait(lock, [&] { return first_started; });
  }
  executor.Add(50);
  executor.Flush();  // runs while the first batch is still running
  executor.Wait();
  EXPECT_TRUE(overlapped);
}

// go-zero's TestPeriodicalExecutor_Wait and _WaitFast, with slow batches.
TEST_F(PeriodicalExecutorTest, WaitReturnsAfterEveryEarlierTaskRan) {
  std::atomic<int> executed{0};
  Executor executor(seconds(60), TestContainer([&](std::vector<int> batch) {
                      std::this_thread::sleep_for(milliseconds(5));
                      executed += static_cast<int>(batch.size());
                    }),
                    Options());
  for (int i = 0; i < 35; ++i) executor.Add(i);  // 3 full batches, 2 left
  executor.Wait();
  EXPECT_EQ(executed.load(), 35);
}

}  // namespace
}  // namespace tickwheel
