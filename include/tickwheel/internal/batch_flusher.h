// SPDX-License-Identifier: Apache-2.0
// The engine of PeriodicalExecutor: batches, ordering, waiting, and the
// background thread that flushes on a clock. Not templated on the task type.
#ifndef TICKWHEEL_INTERNAL_BATCH_FLUSHER_H_
#define TICKWHEEL_INTERNAL_BATCH_FLUSHER_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <thread>
#include <utility>

#include "tickwheel/clock.h"
#include "tickwheel/internal/batch_job.h"
#include "tickwheel/internal/mutex.h"
#include "tickwheel/internal/on_demand_thread.h"
#include "tickwheel/time.h"

namespace tickwheel::internal {

// BatchFlusher turns "the container has tasks" into executed batches. The
// owner keeps the container and gives BatchFlusher `take_batch`, which
// BatchFlusher calls under its own lock to empty the container into a job.
//
// Every batch gets a sequence number when it is taken out of the container.
// Unless `concurrent_batches`, a batch starts only when every batch with a
// smaller number has finished: batches run one at a time, in the order their
// tasks were added, whichever thread runs them. A batch that throws is
// counted (callback_errors), reported, and counts as finished.
//
// The flusher thread starts with the first Add, takes full batches that Adds
// hand it, flushes on every tick of `interval` (unless it ran a handed-over
// batch since the previous tick), and ends at the first tick at least
// kIdleRounds intervals after its last batch when nothing is left; the next
// Add starts a new one. Its Sleeper exists exactly as long as the thread, so
// a ManualClock waits for it only while it runs.
//
// Out of memory: a batch's job and the room for its number are allocated
// before the container is emptied, so a failed take changes nothing (Flush
// and Wait throw std::bad_alloc; a full batch that AddedLocked cannot hand
// over stays in the container; the flusher thread reports it and tries
// again at its next tick). The flusher thread never ends on an exception,
// and Shutdown never fails.
//
// Locks: take_batch runs under the lock; batches, on_error and run_left run
// under none.
//
// Thread safety: all methods may be called from any thread.
class BatchFlusher {
 public:
  static constexpr int kIdleRounds = 10;
  // Full batches that may wait for the flusher thread before Add blocks.
  static constexpr std::uint64_t kWaitingBatches = 16;

  // Called under the flusher's lock: empties the container into a job, or
  // returns an empty job if there was nothing. Out of memory it throws
  // std::bad_alloc with the container unchanged (the job is allocated
  // before the container is emptied).
  using TakeBatch = std::function<BatchJob()>;
  // Called under no lock, by Shutdown when there is no memory for a batch:
  // takes what the container holds (under the lock) and executes it on the
  // calling thread, allocating nothing. Returns false if it held nothing.
  using RunLeft = std::function<bool()>;
  using ErrorHandler = std::function<void(std::exception_ptr)>;

  // `name` (static storage) names the executor in error reports.
  // REQUIRES: interval > 0; `clock` outlives this.
  BatchFlusher(Duration interval, TakeBatch take_batch, RunLeft run_left,
               Clock& clock, ErrorHandler on_error, bool concurrent_batches,
               const char* name);
  // REQUIRES: Shutdown() has returned.
  ~BatchFlusher();

  BatchFlusher(const BatchFlusher&) = delete;
  BatchFlusher& operator=(const BatchFlusher&) = delete;

  // The mutex that guards the owner's container (and everything here). Add
  // is:
  //   std::thread ended;
  //   {
  //     MutexLock lock(flusher.mutex());
  //     bool full = container.AddTask(task);
  //     ended = flusher.AddedLocked(full);
  //   }
  //   if (ended.joinable()) ended.join();
  Mutex& mutex() TW_RETURN_CAPABILITY(mutex_) { return mutex_; }

  // Starts the flusher thread if it is not running. If `full`, takes the
  // batch and queues it for the flusher thread; blocks while more than
  // kWaitingBatches batches (this one included) wait in that queue
  // (back-pressure: a slow batch slows the producers down). Called from
  // inside a batch of this flusher, it does not block. Returns a previous
  // flusher thread that has ended, for the caller to join after unlocking.
  // Throws only if the flusher thread cannot start (std::system_error,
  // std::bad_alloc; nothing changed): a full batch there is no memory to
  // queue stays in the container for the flusher's next tick.
  std::thread AddedLocked(bool full) TW_REQUIRES(mutex_);

  // Takes what the container holds and runs it on the calling thread (after
  // the batches taken before it, unless concurrent). Returns false if the
  // container was empty. Throws std::logic_error if called from inside a
  // batch of this flusher, or std::bad_alloc (nothing changed).
  bool Flush();

  // Flush, then returns once every batch taken before it has finished.
  // Throws std::logic_error if called from inside a batch of this flusher.
  void Wait();

  // Ends the flusher thread (after the batches handed to it), then runs
  // every task left, including tasks that those last batches add. Never
  // fails: with no memory for a batch, the tasks left run on this thread
  // through run_left.
  // REQUIRES: no other call is in progress or follows; not called from
  // inside a batch of this flusher.
  void Shutdown() noexcept;

  // Batches that threw, since construction (each counted before it is
  // reported). Out-of-memory reports of the flusher thread are not counted.
  std::uint64_t callback_errors() const {
    return callback_errors_.load(std::memory_order_relaxed);
  }

  bool flusher_running() const TW_EXCLUDES(mutex_) {
    MutexLock lock(mutex_);
    return thread_.running();
  }

 private:
  void RunFlusher(TimePoint first_tick) TW_EXCLUDES(mutex_);
  // Takes the container's tasks as batch number `*seq`; empty if none.
  // Throws std::bad_alloc with nothing changed.
  BatchJob TakeLocked(std::uint64_t* seq) TW_REQUIRES(mutex_);
  // Takes a full batch and queues it for the flusher thread (AddedLocked).
  // Throws std::bad_alloc with nothing changed.
  void HandOffLocked() TW_REQUIRES(mutex_);
  // Runs what the container holds through run_left_, as a batch (reported
  // if it throws). Returns false if the container held nothing.
  bool RunLeftNow() noexcept;
  // Runs batch `seq` in its turn and marks it finished.
  void RunBatch(BatchJob& job, std::uint64_t seq) TW_EXCLUDES(mutex_);
  // Counts and reports what a batch threw.
  void BatchThrew(std::exception_ptr error) noexcept;
  void ThrowIfInsideBatch(const char* method) const;

  const Duration interval_;
  const TakeBatch take_batch_;
  const RunLeft run_left_;
  Clock& clock_;
  const ErrorHandler on_error_;
  const bool concurrent_batches_;
  const char* const name_;
  std::atomic<std::uint64_t> callback_errors_{0};  // batches that threw

  mutable Mutex mutex_;
  CondVar queue_space_;     // the thread took queued batches
  CondVar batch_finished_;  // first_unfinished_ moved on
  std::uint64_t next_seq_ TW_GUARDED_BY(mutex_) = 0;  // of the next batch
  // Batches numbered from first_unfinished_ on have not all finished;
  // finished_[i] says whether batch first_unfinished_ + i has.
  std::uint64_t first_unfinished_ TW_GUARDED_BY(mutex_) = 0;
  std::deque<bool> finished_ TW_GUARDED_BY(mutex_);
  // Full batches for the flusher thread.
  std::deque<std::pair<std::uint64_t, BatchJob>> handoffs_
      TW_GUARDED_BY(mutex_);
  // The batches the flusher thread took from handoffs_ (swapped, so that
  // taking them allocates nothing) and runs now; empty between runs. Used
  // by the flusher thread alone.
  std::deque<std::pair<std::uint64_t, BatchJob>> running_;
  std::uint64_t handoffs_taken_ TW_GUARDED_BY(mutex_) = 0;  // by the thread
  std::uint64_t handoffs_posted_ TW_GUARDED_BY(mutex_) = 0;  // by AddedLocked
  bool asleep_ TW_GUARDED_BY(mutex_) = false;  // the thread sleeps, or soon
  bool stopping_ TW_GUARDED_BY(mutex_) = false;
  OnDemandThread thread_ TW_GUARDED_BY(mutex_);  // the flusher
};

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_INTERNAL_BATCH_FLUSHER_H_
