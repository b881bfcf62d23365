// SPDX-License-Identifier: Apache-2.0
// PeriodicalExecutor: collects tasks in a container and executes them in
// batches, when the container says it is full or on every tick of a clock.
#ifndef TICKWHEEL_EXECUTORS_PERIODICAL_EXECUTOR_H_
#define TICKWHEEL_EXECUTORS_PERIODICAL_EXECUTOR_H_

#include <concepts>
#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <thread>
#include <utility>

#include "tickwheel/clock.h"
#include "tickwheel/internal/argument_checks.h"
#include "tickwheel/internal/batch_flusher.h"
#include "tickwheel/internal/batch_job.h"
#include "tickwheel/internal/mutex.h"
#include "tickwheel/time.h"

namespace tickwheel {

// A TaskContainer buffers tasks for a PeriodicalExecutor and decides when a
// batch is due. It declares `Task` (what Add takes) and `Batch` (what
// RemoveAll returns; it has `empty()`), and provides:
//   bool AddTask(Task task);       // stores it; true: flush now
//   Batch RemoveAll();             // takes everything stored; must not throw
//   void Execute(Batch batch) const;  // runs a batch
// AddTask and RemoveAll are called under the executor's lock, one at a time,
// so they must not call the executor. Execute is called without it, while
// other threads may be in AddTask, so it must only use state that AddTask
// and RemoveAll do not change (typically a callback set at construction).
// Execute may throw. A task that AddTask could not store (it threw) is
// destroyed after the lock is released if AddTask takes it by rvalue
// reference (`bool AddTask(Task&& task)`), as the library's containers do;
// `Batch`'s move constructor must not throw.
template <typename C>
concept TaskContainer = requires(C& c, const C& cc, typename C::Task task,
                                 typename C::Batch batch) {
  { c.AddTask(std::move(task)) } -> std::convertible_to<bool>;
  { c.RemoveAll() } -> std::same_as<typename C::Batch>;
  cc.Execute(std::move(batch));
  { std::as_const(batch).empty() } -> std::convertible_to<bool>;
};

struct PeriodicalExecutorOptions {
  // Times the flushes; nullptr means SystemClock::Instance(). Must outlive
  // the executor.
  Clock* clock = nullptr;
  // Receives the exception of a batch that threw, on the thread that ran the
  // batch. Empty: one line on stderr. Either way the executor goes on, and
  // callback_errors() counts it.
  std::function<void(std::exception_ptr)> on_error = nullptr;
  // false (the default): batches run one at a time, in the order their tasks
  // were added, even when Flush runs one on the caller's thread.
  // true: a batch that Flush or Wait takes runs at once on the caller's
  // thread, possibly while the flusher thread runs another.
  bool concurrent_batches = false;
};

// PeriodicalExecutor is go-zero's PeriodicalExecutor without its races: Add
// puts a task into a TaskContainer; when AddTask says the container is full,
// the batch is queued for a background flusher thread, and Add blocks while
// more than internal::BatchFlusher::kWaitingBatches (16) full batches, its own
// included, wait in that queue (so a slow Execute slows
// the producers down instead of piling up batches; go-zero's Add waits until
// its batch is taken, a thread switch per batch). The flusher also flushes the
// container on every `interval` tick, unless it ran a full batch since the
// previous tick. It starts with the first Add, ends after 10 idle intervals,
// and the next Add starts it again, so an idle executor holds no thread.
//
// Guarantees: every added task is executed exactly once, including the tasks
// still buffered when the executor is destroyed; Wait returns only after
// every task added before it was executed; a batch that throws is counted
// (callback_errors), reported to `on_error`, and the executor goes on;
// batches do not overlap unless `concurrent_batches`. Nothing global refers
// to an executor: destroying it frees everything.
//
// Locks: AddTask, RemoveAll and Sync's function run under the executor's
// lock; nothing else of the user's does (Execute, on_error, and the
// destruction of tasks, which dies with their batch after it ran).
// Out of memory (std::bad_alloc): Add throws only if AddTask did (the task
// was not stored) or if the flusher thread could not start (the task is
// stored and runs with the next flush); a full batch there is no memory to
// hand over stays in the container for the next tick. Flush and Wait
// allocate a batch before they empty the container, so they throw with the
// container as it was. The flusher thread reports what it could not
// allocate to `on_error` and tries again at its next tick. The destructor
// never fails: with no memory for a batch, it executes what is left on its
// own thread, in order, without allocating.
//
// Thread safety: Add, Flush, Wait and Sync may be called from any thread.
// Add (not Flush or Wait) may be called from inside Execute.
// Cost: Add is O(1) plus AddTask, under one mutex; a batch costs one
// allocation and, when handed over, a thread switch.
//
//   PeriodicalExecutor<MyContainer> executor(100ms, MyContainer(...));
//   executor.Add(task);   // runs within ~100 ms, or at once when full
//   executor.Wait();      // everything added so far has run
template <TaskContainer Container>
class PeriodicalExecutor {
 public:
  using Task = typename Container::Task;
  using Batch = typename Container::Batch;

  // Throws std::invalid_argument if `interval` is not positive.
  PeriodicalExecutor(Duration interval, Container container,
                     PeriodicalExecutorOptions options = {},
                     const char* name = "PeriodicalExecutor")
      : container_(std::move(container)),
        flusher_(
            internal::RequirePositive(interval, name, "interval"),
            [this] {
              flusher_.mutex().AssertHeld();  // the flusher calls under it
              return TakeBatch();
            },
            [this] { return RunLeft(); },
            options.clock ? *options.clock : SystemClock::Instance(),
            std::move(options.on_error), options.concurrent_batches, name) {}

  // Executes every task still buffered (on this thread) and waits for every
  // batch in flight. REQUIRES: no call in progress; not called from a batch.
  ~PeriodicalExecutor() { flusher_.Shutdown(); }

  PeriodicalExecutor(const PeriodicalExecutor&) = delete;
  PeriodicalExecutor& operator=(const PeriodicalExecutor&) = delete;

  // Adds a task. If this fills the container, queues the batch for the
  // flusher thread and blocks while more than 16 full batches (this one
  // included) wait in the queue (never when called from a batch). Throws
  // what AddTask throws (the task was not stored), or std::system_error or
  // std::bad_alloc if the flusher thread cannot start (the task is kept and
  // the next Flush or Add runs it).
  void Add(Task task) {
    std::thread ended;
    {
      internal::MutexLock lock(flusher_.mutex());
      const bool full = container_.AddTask(std::move(task));
      ended = flusher_.AddedLocked(full);
    }
    if (ended.joinable()) ended.join();
  }

  // Executes what the container holds now, on the calling thread (after the
  // batches taken before, unless concurrent_batches). Returns false if it
  // held nothing. Throws std::logic_error if called from inside a batch, or
  // std::bad_alloc with the container unchanged.
  bool Flush() { return flusher_.Flush(); }

  // Flushes, then waits until every batch taken before has finished: every
  // task added before Wait was called has then been executed. Throws
  // std::logic_error if called from inside a batch, or std::bad_alloc (from
  // the Flush) with the container unchanged.
  void Wait() { flusher_.Wait(); }

  // Runs fn(container) under the executor's lock, as AddTask runs, and
  // returns its result. REQUIRES: fn does not call this executor.
  template <typename F>
  decltype(auto) Sync(F&& fn) {
    internal::MutexLock lock(flusher_.mutex());
    return std::forward<F>(fn)(container_);
  }

  // Whether the background flusher thread exists now (for monitoring and
  // tests).
  bool flusher_running() const { return flusher_.flusher_running(); }

  // Batches whose Execute threw, since construction; each is counted
  // before it is handed to on_error. Never throws.
  std::uint64_t callback_errors() const { return flusher_.callback_errors(); }

 private:
  // The flusher calls this under its lock. The job it returns runs under no
  // lock: Execute is const and may run concurrently with AddTask (see
  // TaskContainer).
  // The job is allocated before the container is emptied: out of memory
  // (std::bad_alloc), the tasks stay where they were.
  internal::BatchJob TakeBatch() TW_REQUIRES(flusher_.mutex()) {
    internal::BatchJob job;
    Run& run = job.Emplace<Run>(std::as_const(container_));
    run.batch.emplace(container_.RemoveAll());
    if (std::as_const(*run.batch).empty()) return {};
    return job;
  }

  // Takes what the container holds and executes it here, allocating
  // nothing: the destructor's way when there is no memory for a batch.
  // Returns false if the container held nothing.
  bool RunLeft() TW_EXCLUDES(flusher_.mutex()) {
    std::optional<Batch> batch;
    const Container* container = nullptr;  // Execute needs no lock
    {
      internal::MutexLock lock(flusher_.mutex());
      container = &container_;
      batch.emplace(container_.RemoveAll());
    }
    if (std::as_const(*batch).empty()) return false;
    container->Execute(std::move(*batch));
    return true;
  }

  // A batch: the tasks, and the container that executes them.
  struct Run {
    explicit Run(const Container& c) : container(c) {}
    void operator()() { container.Execute(std::move(*batch)); }
    const Container& container;
    std::optional<Batch> batch;  // filled in after the job is allocated
  };

  Container container_ TW_GUARDED_BY(flusher_.mutex());
  internal::BatchFlusher flusher_;
};

}  // namespace tickwheel

#endif  // TICKWHEEL_EXECUTORS_PERIODICAL_EXECUTOR_H_
