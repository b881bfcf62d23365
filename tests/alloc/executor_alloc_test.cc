// SPDX-License-Identifier: Apache-2.0
// The executors swept over their allocations, also on their flusher
// threads; and every type's constructor, which throws and leaves no thread
// running (alloc_sweep.h says what every sweep checks).
#include "alloc/alloc_sweep.h"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <functional>
#include <list>
#include <memory>
#include <vector>

#include "runtime_test_util.h"
#include "tickwheel/cache.h"
#include "tickwheel/clock.h"
#include "tickwheel/executors/bulk_executor.h"
#include "tickwheel/executors/chunk_executor.h"
#include "tickwheel/executors/delay_executor.h"
#include "tickwheel/executors/periodical_executor.h"
#include "tickwheel/timer_service.h"
#include "tickwheel/timing_wheel.h"
#include "watchdog.h"

namespace tickwheel {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::WithinDeadline;
using testing::alloc::FailOthers;

// ---------------------------------------------------------------------------
// Executors.

// Which tasks ran, in order, without allocating.
class TaskLog {
 public:
  static constexpr int kTasks = 256;
  void Ran(int task) {
    order_[next_++] = task;
    ++runs_[task];
  }
  // Tasks 0..n-1 each ran exactly once, in order.
  void ExpectRanOnceInOrder(int n) const {
    EXPECT_EQ(next_.load(), n);
    for (int i = 0; i < n && i < next_.load(); ++i) {
      EXPECT_EQ(order_[i].load(), i) << "position " << i;
      EXPECT_EQ(runs_[i].load(), 1) << "task " << i;
    }
  }
  // How many runs there were.
  int ran() const { return next_.load(); }
  std::function<void(std::vector<int>)> Execute() {
    return [this](std::vector<int> batch) {
      for (int t : batch) Ran(t);
    };
  }

 private:
  std::array<std::atomic<int>, kTasks> order_{};
  std::array<std::atomic<int>, kTasks> runs_{};
  std::atomic<int> next_{0};
};

// A PeriodicalExecutor container of the user's own (TaskContainer): tasks
// in a std::list, a node per task (AddTask allocates each time; an empty
// list allocates nothing, so RemoveAll cannot throw), full at 4 tasks.
class ListContainer {
 public:
  using Task = int;
  using Batch = std::list<int>;
  explicit ListContainer(TaskLog& log) : log_(log) {}
  bool AddTask(int&& task) {
    tasks_.push_back(task);
    return tasks_.size() >= 4;
  }
  Batch RemoveAll() noexcept {
    Batch batch;
    batch.swap(tasks_);
    return batch;
  }
  void Execute(Batch batch) const {
    for (int t : batch) log_.Ran(t);
  }

 private:
  TaskLog& log_;
  std::list<int> tasks_;
};

// Sweeps an executor's Add, Flush, Wait and destructor over their
// allocations, and an Add that restarts the flusher thread after it ended
// (the ended thread is handed back to be joined: before, a failure to start
// the new one destroyed the ended one while joinable, std::terminate).
// `make(log, clock)` makes an executor (in a std::unique_ptr) whose batches
// log their tasks and whose 4th buffered task fills a batch; `add(executor,
// task)` adds one. Every task whose Add returned is executed exactly once,
// in order, and Wait returns, whichever allocation fails.
template <typename Make, typename Add>
void SweepExecutorCalls(ManualClock& clock, Make make, Add add) {
  const char* names[] = {"Add", "Flush", "Wait", "the destructor",
                         "Add restarting the flusher thread"};
  for (int call = 0; call < 5; ++call) {
    EXPECT_GT(Sweep(names[call], [&](long n) {
      TaskLog log;
      auto executor = make(log, clock);
      int added = 0;
      for (; added < 6; ++added) add(*executor, added);
      executor->Wait();
      // 11 idle intervals: the flusher thread has ended, so the next Add
      // starts a new one (and hands over the ended one to be joined).
      for (int i = 0; i < 11; ++i) clock.Advance(milliseconds(10));
      EXPECT_FALSE(executor->flusher_running());
      bool injected;
      bool threw;
      // An Add that threw stored its task if only the thread's start failed
      // (it runs with the next flush); not if storing it failed.
      bool maybe_stored = false;
      if (call == 4) {
        threw = Throws(n, injected, [&] { add(*executor, added); });
        if (threw) {
          maybe_stored = true;
        } else {
          ++added;
        }
      } else {
        add(*executor, added++);
        add(*executor, added++);
        add(*executor, added++);
        threw = Throws(n, injected, [&] {
          switch (call) {
            case 0:
              add(*executor, added);  // the 4th of a batch: handed over
              break;
            case 1:
              executor->Flush();
              break;
            case 2:
              executor->Wait();
              break;
            default:
              executor.reset();
          }
        });
        if (call == 0 && !threw) ++added;
      }
      if (executor) {
        executor->Wait();
        executor.reset();
      }
      if (maybe_stored && log.ran() == added + 1) ++added;
      log.ExpectRanOnceInOrder(added);
      return injected;
    }), 0);
  }
}

// (Before: a Flush that failed after taking its batch lost the tasks, and
// one that failed after numbering it made every Wait hang.)
TEST(ExecutorAllocTest, BulkExecutorLosesNoTaskAndWaitReturns) {
  ManualClock clock;
  WithinDeadline("the sweep", [&] {
    SweepExecutorCalls(
        clock,
        [](TaskLog& log, ManualClock& c) {
          return std::make_unique<BulkExecutor<int>>(
              log.Execute(), BulkExecutorOptions{.max_tasks = 4,
                                                 .interval = milliseconds(10),
                                                 .clock = &c});
        },
        [](BulkExecutor<int>& e, int task) { e.Add(task); });
  });
}

TEST(ExecutorAllocTest, ChunkExecutorLosesNoTaskAndWaitReturns) {
  ManualClock clock;
  WithinDeadline("the sweep", [&] {
    SweepExecutorCalls(
        clock,
        [](TaskLog& log, ManualClock& c) {
          return std::make_unique<ChunkExecutor<int>>(
              log.Execute(), ChunkExecutorOptions{.max_bytes = 10,
                                                  .interval = milliseconds(10),
                                                  .clock = &c});
        },
        // 3 bytes each: the 4th task makes 12 of 10, a full batch.
        [](ChunkExecutor<int>& e, int task) { e.Add(task, 3); });
  });
}

// A container of the user's own, whose AddTask allocates too.
TEST(ExecutorAllocTest, PeriodicalExecutorWithItsOwnContainerLosesNoTask) {
  ManualClock clock;
  WithinDeadline("the sweep", [&] {
    SweepExecutorCalls(
        clock,
        [](TaskLog& log, ManualClock& c) {
          return std::make_unique<PeriodicalExecutor<ListContainer>>(
              milliseconds(10), ListContainer(log),
              PeriodicalExecutorOptions{.clock = &c});
        },
        [](PeriodicalExecutor<ListContainer>& e, int task) { e.Add(task); });
  });
}

// The flusher thread runs out of memory (taking a batch): reported, and
// the tasks run at a later tick. (Before: the exception ended the process.)
TEST(ExecutorAllocTest, FlusherThreadOutOfMemoryLosesNoTask) {
  ManualClock clock;
  WithinDeadline("the sweep", [&] {
    for (long k = 1; k <= 4; ++k) {
      TaskLog log;
      std::atomic<int> errors{0};
      {
        BulkExecutor<int> executor(
            log.Execute(),
            {.max_tasks = 100, .interval = milliseconds(10), .clock = &clock,
             .on_error = [&](std::exception_ptr) { ++errors; }});
        for (int i = 0; i < 10; ++i) executor.Add(i);
        {
          FailOthers fail(k);
          for (int t = 0; t < 10 && fail.failed() < k; ++t) {
            clock.Advance(milliseconds(10));
          }
          EXPECT_EQ(fail.failed(), k);
        }
        clock.Advance(milliseconds(10));
        executor.Wait();
        EXPECT_GE(errors.load(), 1);
      }
      log.ExpectRanOnceInOrder(10);
    }
  });
}

TEST(ExecutorAllocTest, ChunkAndDelayExecutorsLoseNothing) {
  ManualClock clock;
  WithinDeadline("the sweep", [&] {
    EXPECT_GT(Sweep("ChunkExecutor::Add", [&](long n) {
      TaskLog log;
      int added = 0;
      {
        ChunkExecutor<int> executor(log.Execute(), {.max_bytes = 10,
                                                    .interval = milliseconds(10),
                                                    .clock = &clock});
        for (; added < 3; ++added) executor.Add(added, 3);
        bool injected_here;
        const bool threw = Throws(n, injected_here, [&] { executor.Add(added, 3); });
        if (!threw) ++added;
        executor.Wait();
        log.ExpectRanOnceInOrder(added);
        if (!injected_here) return false;
      }
      return true;
    }), 0);
    EXPECT_GT(Sweep("DelayExecutor::Trigger", [&](long n) {
      std::atomic<int> runs{0};
      bool injected;
      bool threw;
      {
        DelayExecutor executor([&] { ++runs; }, milliseconds(10),
                               {.clock = &clock});
        threw = Throws(n, injected, [&] { executor.Trigger(); });
        clock.Advance(milliseconds(10));
        EXPECT_EQ(runs.load(), threw ? 0 : 1);
        executor.Trigger();  // works again
      }
      EXPECT_EQ(runs.load(), threw ? 1 : 2);  // the destructor ran the last
      return injected;
    }), 0);
    // Its thread ended after the first run; the Trigger under failure
    // starts a new one, and hands the ended one back to be joined (before:
    // a failure there destroyed it joinable, std::terminate).
    EXPECT_GT(Sweep("DelayExecutor::Trigger restarting its ended thread",
                    [&](long n) {
      std::atomic<int> runs{0};
      bool injected;
      bool threw;
      {
        DelayExecutor executor([&] { ++runs; }, milliseconds(10),
                               {.clock = &clock});
        executor.Trigger();
        clock.Advance(milliseconds(10));
        EXPECT_EQ(runs.load(), 1);
        threw = Throws(n, injected, [&] { executor.Trigger(); });
        clock.Advance(milliseconds(10));
        EXPECT_EQ(runs.load(), threw ? 1 : 2);
        executor.Trigger();  // works again
      }
      EXPECT_EQ(runs.load(), threw ? 2 : 3);
      return injected;
    }), 0);
  });
}

TEST(ConstructorAllocTest, ConstructorsThrowAndLeaveNothingRunning) {
  ManualClock clock;
  WithinDeadline("the sweep", [&] {
    EXPECT_GT(Sweep("TimerService", [&](long n) {
      bool injected;
      Throws(n, injected, [&] {
        TimerService s(TimerServiceOptions{.workers = 4, .clock = &clock});
      });
      return injected;
    }), 0);
    EXPECT_GT(Sweep("TimingWheel", [&](long n) {
      bool injected;
      Throws(n, injected, [&] {
        TimingWheel<int, int> w(milliseconds(1), [](const int&, const int&) {},
                                TimingWheelOptions{.workers = 4, .clock = &clock});
      });
      return injected;
    }), 0);
    EXPECT_GT(Sweep("Cache", [&](long n) {
      bool injected;
      Throws(n, injected, [&] {
        Cache<int, int> c(seconds(1), {.clock = &clock,
                                       .report_interval = seconds(1),
                                       .report = [](const CacheStats&) {}});
      });
      return injected;
    }), 0);
    EXPECT_GT(Sweep("BulkExecutor", [&](long n) {
      bool injected;
      Throws(n, injected, [&] {
        BulkExecutor<int> b([](std::vector<int>) {}, {.clock = &clock});
        b.Add(1);  // starts the flusher thread
      });
      return injected;
    }), 0);
    // The other executors, each with the call that starts its thread; the
    // task or trigger that a successful construction took is run by the
    // destructor (checked by the sweeps above), so only "nothing left
    // running, nothing leaked" is checked here (and by ASan).
    EXPECT_GT(Sweep("ChunkExecutor", [&](long n) {
      bool injected;
      Throws(n, injected, [&] {
        ChunkExecutor<int> c([](std::vector<int>) {}, {.clock = &clock});
        c.Add(1, 1);
      });
      return injected;
    }), 0);
    EXPECT_GT(Sweep("PeriodicalExecutor with its own container", [&](long n) {
      TaskLog log;
      bool injected;
      const bool threw = Throws(n, injected, [&] {
        PeriodicalExecutor<ListContainer> p(
            milliseconds(10), ListContainer(log), {.clock = &clock});
        p.Add(0);
      });
      // The task ran (the destructor ran it) unless the construction or
      // its AddTask failed; the flusher thread's start failing leaves it
      // stored, and the destructor runs it too.
      if (!threw) log.ExpectRanOnceInOrder(1);
      return injected;
    }), 0);
    EXPECT_GT(Sweep("DelayExecutor", [&](long n) {
      std::atomic<int> runs{0};
      bool injected;
      const bool threw = Throws(n, injected, [&] {
        DelayExecutor d([&] { ++runs; }, milliseconds(10), {.clock = &clock});
        d.Trigger();
      });
      EXPECT_EQ(runs.load(), threw ? 0 : 1);  // the destructor runs it
      return injected;
    }), 0);
  });
}

}  // namespace
}  // namespace tickwheel
