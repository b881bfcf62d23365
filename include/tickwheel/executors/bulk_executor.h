// SPDX-License-Identifier: Apache-2.0
// BulkExecutor: executes tasks in batches of up to N, or whatever has
// accumulated after an interval.
#ifndef TICKWHEEL_EXECUTORS_BULK_EXECUTOR_H_
#define TICKWHEEL_EXECUTORS_BULK_EXECUTOR_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <utility>
#include <vector>

#include "tickwheel/clock.h"
#include "tickwheel/executors/periodical_executor.h"
#include "tickwheel/internal/argument_checks.h"
#include "tickwheel/time.h"

namespace tickwheel {

struct BulkExecutorOptions {
  // A batch is executed as soon as it holds this many tasks (> 0).
  std::size_t max_tasks = 1000;
  // ... or at the latest this long (> 0) after the flusher's previous tick.
  Duration interval = std::chrono::seconds(1);
  // As in PeriodicalExecutorOptions.
  Clock* clock = nullptr;
  std::function<void(std::exception_ptr)> on_error = nullptr;
  bool concurrent_batches = false;
};

// BulkExecutor is go-zero's BulkExecutor: `execute` receives the tasks in
// batches of exactly `max_tasks`, except the batches that an interval tick,
// Flush, Wait or the destructor take early. A PeriodicalExecutor underneath
// gives the guarantees: every task executed exactly once, in the order added
// (batches do not overlap unless concurrent_batches), Wait covers every
// earlier Add, a batch that throws is reported and the executor goes on, and
// the destructor executes what is left.
//
// Locks: `execute` and on_error run under no lock of the executor, and a
// batch's tasks are destroyed after it ran, under none; only a task's move
// constructor (and the destructor of a moved-from task) runs under it.
// Out of memory (std::bad_alloc): Add throws only if the task was not
// stored, or if the flusher thread could not start (std::system_error too;
// the task is stored and runs with the next flush); Flush and Wait throw
// with the buffered tasks as they were; the flusher thread reports to
// on_error and tries again at its next tick; the destructor never fails
// (PeriodicalExecutor's guarantees).
//
// Thread safety: every method may be called from any thread; Add also from
// inside `execute`.
// Cost: Add is an amortized O(1) vector append under a mutex.
//
//   BulkExecutor<Row> inserts([&](std::vector<Row> rows) { db.Insert(rows); },
//                             {.max_tasks = 500, .interval = 100ms});
//   inserts.Add(row);
//   inserts.Wait();  // every row added so far is in the database
template <typename T>
class BulkExecutor {
 public:
  using Execute = std::function<void(std::vector<T>)>;

  // Throws std::invalid_argument naming the argument if `execute` is empty,
  // max_tasks is 0 or interval is not positive.
  explicit BulkExecutor(Execute execute, BulkExecutorOptions options = {})
      : executor_(options.interval,
                  Container(internal::RequireCallable(std::move(execute), kName,
                                                      "execute"),
                            internal::RequirePositive(options.max_tasks, kName,
                                                      "max_tasks")),
                  {.clock = options.clock,
                   .on_error = std::move(options.on_error),
                   .concurrent_batches = options.concurrent_batches},
                  kName) {}

  // As PeriodicalExecutor's: Add blocks only while full batches pile up
  // behind a slow `execute`; Flush runs the buffered tasks on this thread; Wait
  // returns once every task added before it has been executed.
  void Add(T task) { executor_.Add(std::move(task)); }
  bool Flush() { return executor_.Flush(); }
  void Wait() { executor_.Wait(); }

  bool flusher_running() const { return executor_.flusher_running(); }
  // Calls of `execute` that threw (each reported to on_error), since
  // construction.
  std::uint64_t callback_errors() const { return executor_.callback_errors(); }

 private:
  static constexpr const char* kName = "BulkExecutor";

  class Container {
   public:
    using Task = T;
    using Batch = std::vector<T>;

    Container(BulkExecutor::Execute execute, std::size_t max_tasks)
        : execute_(std::move(execute)), max_tasks_(max_tasks) {}

    // By rvalue reference: a task that push_back could not store stays in
    // Add's frame and is destroyed after the executor's lock.
    bool AddTask(T&& task) {
      tasks_.push_back(std::move(task));
      return tasks_.size() >= max_tasks_;
    }
    Batch RemoveAll() noexcept { return std::exchange(tasks_, {}); }
    void Execute(Batch batch) const { execute_(std::move(batch)); }

   private:
    const BulkExecutor::Execute execute_;
    const std::size_t max_tasks_;
    std::vector<T> tasks_;
  };

  PeriodicalExecutor<Container> executor_;
};

}  // namespace tickwheel

#endif  // TICKWHEEL_EXECUTORS_BULK_EXECUTOR_H_
