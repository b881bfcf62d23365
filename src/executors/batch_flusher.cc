// SPDX-License-Identifier: Apache-2.0
#include "tickwheel/internal/batch_flusher.h"

#include <new>
#include <stdexcept>
#include <string>

#include "tickwheel/internal/report_error.h"
#include "tickwheel/internal/time_math.h"

namespace tickwheel::internal {
namespace {

// The flusher whose batch the current thread is running, if any.
thread_local const BatchFlusher* running_batch_of = nullptr;

// Marks the current thread as running a batch of `flusher` (nesting works:
// a batch of one executor may run a batch of another).
class InsideBatch {
 public:
  explicit InsideBatch(const BatchFlusher* flusher) : saved_(running_batch_of) {
    running_batch_of = flusher;
  }
  ~InsideBatch() { running_batch_of = saved_; }
  InsideBatch(const InsideBatch&) = delete;
  InsideBatch& operator=(const InsideBatch&) = delete;

 private:
  const BatchFlusher* const saved_;
};

}  // namespace

BatchFlusher::BatchFlusher(Duration interval, TakeBatch take_batch,
                           RunLeft run_left, Clock& clock,
                           ErrorHandler on_error, bool concurrent_batches,
                           const char* name)
    : interval_(interval),
      take_batch_(std::move(take_batch)),
      run_left_(std::move(run_left)),
      clock_(clock),
      on_error_(std::move(on_error)),
      concurrent_batches_(concurrent_batches),
      name_(name),
      thread_(clock) {}

BatchFlusher::~BatchFlusher() = default;

std::thread BatchFlusher::AddedLocked(bool full) {
  std::thread ended;
  if (!thread_.running() && !stopping_) {
    // The first tick is read before Add returns: a ManualClock advanced
    // after the Add counts from here.
    const TimePoint first_tick = AddSaturated(clock_.Now(), interval_);
    ended = thread_.StartLocked([this, first_tick] { RunFlusher(first_tick); });
  }
  // Without a flusher thread (only while shutting down) a full batch stays
  // in the container for Shutdown's final flush.
  if (full && thread_.running()) {
    try {
      HandOffLocked();
    } catch (const std::bad_alloc&) {
      // The task is stored: the batch stays in the container, and the
      // flusher thread takes it at its next tick (or the next Add hands it
      // over).
    }
  }
  return ended;
}

void BatchFlusher::HandOffLocked() {
  // Room in the queue first, then the batch: a failure changes nothing.
  handoffs_.emplace_back(0, BatchJob());
  std::uint64_t seq = 0;
  BatchJob job;
  try {
    job = TakeLocked(&seq);
  } catch (...) {
    handoffs_.pop_back();
    throw;
  }
  if (!job) {
    handoffs_.pop_back();
    return;
  }
  handoffs_.back() = {seq, std::move(job)};
  const std::uint64_t ticket = handoffs_posted_++;
  // Awake, the thread looks at handoffs_ before it sleeps again.
  if (asleep_) {
    asleep_ = false;
    thread_.WakeLocked();
  }
  // From inside a batch, waiting could wait for ourselves.
  if (running_batch_of != this) {
    while (ticket >= handoffs_taken_ + kWaitingBatches) {
      queue_space_.Wait(mutex_);
    }
  }
}

void BatchFlusher::RunFlusher(TimePoint next_tick) {
  TimePoint last_batch = next_tick - interval_;
  bool ran_handoff = false;  // since the previous tick
  MutexLock lock(mutex_);
  for (;;) {
    if (!handoffs_.empty()) {
      // All queued batches at once: one critical section for many batches
      // (a swap with the empty running_, which allocates nothing).
      running_.swap(handoffs_);
      handoffs_taken_ += running_.size();
      queue_space_.SignalAll();
      ran_handoff = true;
      lock.Unlock();
      for (auto& [seq, job] : running_) RunBatch(job, seq);
      running_.clear();
      lock.Lock();
      last_batch = clock_.Now();
      continue;
    }
    if (stopping_) break;
    const TimePoint now = clock_.Now();
    if (now >= next_tick) {
      // The next tick after `now`; missed ticks are skipped, not bursted.
      next_tick = NextTickAfter(next_tick, now, interval_);
      if (ran_handoff) {
        ran_handoff = false;
      } else {
        std::uint64_t seq = 0;
        BatchJob job;
        std::exception_ptr error;
        try {
          job = TakeLocked(&seq);
        } catch (...) {
          error = std::current_exception();
        }
        if (error) {
          // Out of memory: the tasks stay in the container for the next
          // tick (this thread does not end while they are there).
          lock.Unlock();
          ReportError(name_, on_error_, error);
          lock.Lock();
          continue;
        }
        if (job) {
          lock.Unlock();
          RunBatch(job, seq);
          lock.Lock();
          last_batch = clock_.Now();
          continue;
        }
        if ((now - last_batch) / kIdleRounds >= interval_) break;  // no overflow
      }
    }
    Sleeper& sleeper = thread_.sleeper();
    const std::uint64_t token = sleeper.token();
    asleep_ = true;
    lock.Unlock();
    sleeper.SleepUntil(next_tick, token);
    lock.Lock();
    asleep_ = false;
  }
  // Ending under the lock: an Add after this starts a new thread, and one
  // before it has seen the container non-empty or handed us its batch.
  thread_.EndedLocked();
}

BatchJob BatchFlusher::TakeLocked(std::uint64_t* seq) {
  // Room for the batch's flag first, then its job, which empties the
  // container last: a failure changes nothing (before, a number could be
  // taken and never finished, and every later Wait hung).
  finished_.push_back(false);
  BatchJob job;
  try {
    job = take_batch_();
  } catch (...) {
    finished_.pop_back();
    throw;
  }
  if (!job) {
    finished_.pop_back();
    return job;
  }
  *seq = next_seq_++;
  return job;
}

void BatchFlusher::RunBatch(BatchJob& job, std::uint64_t seq) {
  if (!concurrent_batches_) {
    MutexLock lock(mutex_);
    while (first_unfinished_ != seq) batch_finished_.Wait(mutex_);
  }
  {
    InsideBatch inside(this);
    try {
      job();
    } catch (...) {
      BatchThrew(std::current_exception());
    }
    job = BatchJob();  // the tasks are destroyed before the batch finishes
  }
  MutexLock lock(mutex_);
  finished_[seq - first_unfinished_] = true;
  while (!finished_.empty() && finished_.front()) {
    finished_.pop_front();
    ++first_unfinished_;
  }
  batch_finished_.SignalAll();
}

bool BatchFlusher::Flush() {
  ThrowIfInsideBatch("Flush");
  std::uint64_t seq = 0;
  BatchJob job;
  {
    MutexLock lock(mutex_);
    job = TakeLocked(&seq);
  }
  if (!job) return false;
  RunBatch(job, seq);
  return true;
}

void BatchFlusher::Wait() {
  ThrowIfInsideBatch("Wait");
  Flush();
  MutexLock lock(mutex_);
  const std::uint64_t bound = next_seq_;
  while (first_unfinished_ < bound) batch_finished_.Wait(mutex_);
}

void BatchFlusher::Shutdown() noexcept {
  std::thread flusher;
  {
    MutexLock lock(mutex_);
    stopping_ = true;
    thread_.WakeLocked();
    flusher = thread_.TakeLocked();
  }
  if (flusher.joinable()) flusher.join();
  try {
    Wait();
    // Batches may have added tasks while they ran; nothing is left behind.
    while (Flush()) {
    }
  } catch (const std::bad_alloc&) {
    // No memory for a batch. Every numbered batch has finished (the flusher
    // ran its own before it ended, no other call is in progress, and a
    // failed take numbers nothing), so running the rest here keeps the
    // order.
    while (RunLeftNow()) {
    }
  }
}

bool BatchFlusher::RunLeftNow() noexcept {
  InsideBatch inside(this);
  try {
    return run_left_();
  } catch (...) {
    BatchThrew(std::current_exception());
    return true;  // it ran a batch, which threw
  }
}

void BatchFlusher::BatchThrew(std::exception_ptr error) noexcept {
  callback_errors_.fetch_add(1, std::memory_order_relaxed);
  ReportError(name_, on_error_, error);
}

void BatchFlusher::ThrowIfInsideBatch(const char* method) const {
  if (running_batch_of == this) {
    throw std::logic_error(std::string("tickwheel::") + name_ + "::" + method +
                           " called from inside one of its own batches");
  }
}

}  // namespace tickwheel::internal
