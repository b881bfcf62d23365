// SPDX-License-Identifier: Apache-2.0
// Many threads against one executor, on the real clock: every task executed
// exactly once, Wait covering each thread's earlier adds, batches never
// overlapping.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "tickwheel/executors/bulk_executor.h"
#include "tickwheel/executors/chunk_executor.h"

namespace tickwheel {
namespace {

using std::chrono::milliseconds;

constexpr int kThreads = 4;
constexpr int kTasksPerThread = 20'000;
constexpr int kTasks = kThreads * kTasksPerThread;

// Counts executions per task and the largest number of batches in flight.
class ExecutionLog {
 public:
  ExecutionLog() : counts_(new std::atomic<int>[kTasks]) {
    for (int i = 0; i < kTasks; ++i) counts_[i] = 0;
  }

  void Execute(const std::vector<int>& batch) {
    const int in_flight = ++in_flight_;
    int seen = max_in_flight_.load();
    while (in_flight > seen &&
           !max_in_flight_.compare_exchange_weak(seen, in_flight)) {
    }
    for (int task : batch) ++counts_[task];
    --in_flight_;
  }

  int count(int task) const { return counts_[task].load(); }
  int max_in_flight() const { return max_in_flight_.load(); }

 private:
  std::unique_ptr<std::atomic<int>[]> counts_;
  std::atomic<int> in_flight_{0};
  std::atomic<int> max_in_flight_{0};
};

// Each thread adds its own tasks, now and then flushing or waiting, and
// after a Wait checks that every task it added before is executed.
template <typename AddFn, typename Executor>
void Produce(int thread, Executor& executor, AddFn add, const ExecutionLog& log,
             std::atomic<int>& wait_violations) {
  std::mt19937 random(static_cast<unsigned>(thread));
  const int first = thread * kTasksPerThread;
  for (int i = 0; i < kTasksPerThread; ++i) {
    add(first + i);
    const auto dice = random() % 1000;
    if (dice == 0) {
      executor.Wait();
      for (int j = first; j <= first + i; ++j) {
        if (log.count(j) != 1) ++wait_violations;
      }
    } else if (dice < 5) {
      executor.Flush();
    }
  }
}

template <typename Executor, typename AddFn>
void RunStress(Executor& executor, AddFn add, ExecutionLog& log) {
  std::atomic<int> wait_violations{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back(
        [&, t] { Produce(t, executor, add, log, wait_violations); });
  }
  for (auto& thread : threads) thread.join();
  executor.Wait();
  EXPECT_EQ(wait_violations.load(), 0);
  int wrong = 0;
  for (int i = 0; i < kTasks; ++i) wrong += log.count(i) != 1;
  EXPECT_EQ(wrong, 0) << "tasks not executed exactly once";
  EXPECT_EQ(log.max_in_flight(), 1);
}

TEST(ExecutorStressTest, BulkExecutorRunsEveryTaskOnceUnderManyProducers) {
  ExecutionLog log;
  BulkExecutor<int> executor([&](std::vector<int> b) { log.Execute(b); },
                             {.max_tasks = 7, .interval = milliseconds(1)});
  RunStress(
      executor, [&](int task) { executor.Add(task); }, log);
}

TEST(ExecutorStressTest, ChunkExecutorRunsEveryTaskOnceUnderManyProducers) {
  ExecutionLog log;
  ChunkExecutor<int> executor([&](std::vector<int> b) { log.Execute(b); },
                              {.max_bytes = 100, .interval = milliseconds(1)});
  RunStress(
      executor, [&](int task) { executor.Add(task, task % 13); }, log);
}

TEST(ExecutorStressTest, EveryTaskRunsOnceWhenTheExecutorIsDestroyedMidStream) {
  ExecutionLog log;
  {
    BulkExecutor<int> executor([&](std::vector<int> b) { log.Execute(b); },
                               {.max_tasks = 64, .interval = milliseconds(1)});
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < kTasksPerThread; ++i) {
          executor.Add(t * kTasksPerThread + i);
        }
      });
    }
    for (auto& thread : threads) thread.join();
  }  // no Wait: the destructor must execute what is left
  int wrong = 0;
  for (int i = 0; i < kTasks; ++i) wrong += log.count(i) != 1;
  EXPECT_EQ(wrong, 0);
}

}  // namespace
}  // namespace tickwheel
