// SPDX-License-Identifier: Apache-2.0
// A fixed set of threads that hand queued items to a function, in order.
#ifndef TICKWHEEL_INTERNAL_WORKER_POOL_H_
#define TICKWHEEL_INTERNAL_WORKER_POOL_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <thread>
#include <utility>
#include <vector>

#include "tickwheel/internal/argument_checks.h"
#include "tickwheel/internal/mutex.h"
#include "tickwheel/internal/report_error.h"

namespace tickwheel::internal {

// The pool whose worker is running on this thread, if any.
inline thread_local const void* current_worker_pool = nullptr;

// WorkerPool<Item> runs `run(item)` for each submitted item on `threads`
// threads, in submission order (with one thread, strictly one after
// another). Items are stored by value: no allocation per item beyond the
// queue's. If `run` throws, the error is counted (errors()) and reported,
// and the pool goes on.
// Items (user objects) are destroyed under no lock: after their run, or,
// dropped by Stop, after Stop released the pool's lock.
//
// Thread safety: every method may be called from any thread, including from
// inside `run`. Stop may be called from inside `run`: it then waits for every
// other running item, but not for the one calling it.
template <typename Item>
class WorkerPool {
 public:
  using Run = std::function<void(Item&)>;
  using ErrorHandler = std::function<void(std::exception_ptr)>;

  // Throws std::invalid_argument if threads == 0. `who` names the owner in
  // messages. If a thread cannot start, throws what std::thread threw
  // (std::system_error, std::bad_alloc) after ending the ones that did.
  WorkerPool(std::size_t threads, Run run, ErrorHandler on_error,
             const char* who)
      : run_(std::move(run)), on_error_(std::move(on_error)), who_(who) {
    RequirePositive(threads, who, "workers");
    threads_.reserve(threads);
    try {
      for (std::size_t i = 0; i < threads; ++i) {
        threads_.emplace_back([this] { Work(); });
      }
    } catch (...) {
      Stop();
      for (std::thread& t : threads_) t.join();
      throw;
    }
  }

  // Stops, then joins the threads. REQUIRES: not called from inside `run`.
  ~WorkerPool() {
    Stop();
    for (std::thread& t : threads_) t.join();
  }

  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Queues the items, moving them out of `items`, which it empties (the
  // moved-from shells are destroyed after unlocking); false once stopped,
  // leaving them there for the caller to drop. If the queue cannot grow
  // (std::bad_alloc), the items queued so far stay queued and are removed
  // from `items`, the others stay in `items`, and the exception propagates.
  bool SubmitAll(std::vector<Item>& items) TW_EXCLUDES(mutex_) {
    const std::size_t count = items.size();
    if (count == 0) return true;
    std::size_t queued = 0;
    std::exception_ptr error;
    {
      MutexLock lock(mutex_);
      if (stopping_) return false;
      try {
        for (; queued < count; ++queued) {
          queue_.push_back(std::move(items[queued]));  // strong guarantee
        }
      } catch (...) {
        error = std::current_exception();
      }
    }
    items.erase(items.begin(),
                items.begin() + static_cast<std::ptrdiff_t>(queued));
    if (queued == 1) {
      work_.Signal();
    } else if (queued > 1) {
      work_.SignalAll();
    }
    if (error) std::rethrow_exception(error);
    return true;
  }

  // Drops queued items, refuses new ones, and waits until no item is being
  // run except the caller's own and those whose `run` is itself blocked in
  // Stop (so two items stopping the pool at once do not wait for each
  // other). Idempotent.
  // Never throws: it allocates nothing.
  void Stop() TW_EXCLUDES(mutex_) {
    MutexLock lock(mutex_);
    stopping_ = true;
    work_.SignalAll();
    // The dropped items are destroyed one at a time under no lock (a
    // second deque to swap them into would allocate: Stop must not fail).
    // Nothing is queued any more once stopping_ is set.
    while (!queue_.empty()) {
      {
        [[maybe_unused]] Item item = std::move(queue_.front());
        queue_.pop_front();
        lock.Unlock();
      }  // the item is destroyed under no lock
      lock.Lock();
    }
    const bool self = OnWorkerThread();
    if (self) {
      ++in_stop_;
      idle_.SignalAll();
    }
    while (running_ != in_stop_) idle_.Wait(mutex_);
    if (self) {
      --in_stop_;
      idle_.SignalAll();
    }
  }

  bool OnWorkerThread() const { return current_worker_pool == this; }

  // How many runs threw, since construction. A run is counted before its
  // error is reported, so on_error already sees it in the count.
  std::uint64_t errors() const {
    return errors_.load(std::memory_order_relaxed);
  }

  void Work() TW_EXCLUDES(mutex_) {
    current_worker_pool = this;
    MutexLock lock(mutex_);
    for (;;) {
      while (!stopping_ && queue_.empty()) work_.Wait(mutex_);
      if (stopping_) return;
      {
        Item item = std::move(queue_.front());
        queue_.pop_front();
        ++running_;
        lock.Unlock();
        try {
          run_(item);
        } catch (...) {
          errors_.fetch_add(1, std::memory_order_relaxed);
          ReportError(who_, on_error_, std::current_exception());
        }
      }  // the item is destroyed under no lock
      lock.Lock();
      --running_;
      idle_.SignalAll();
    }
  }

  const Run run_;
  const ErrorHandler on_error_;
  const char* const who_;
  std::atomic<std::uint64_t> errors_{0};  // runs that threw

  Mutex mutex_;
  CondVar work_;  // items queued, or stopping
  CondVar idle_;  // running_ or in_stop_ changed
  std::deque<Item> queue_ TW_GUARDED_BY(mutex_);
  bool stopping_ TW_GUARDED_BY(mutex_) = false;
  std::size_t running_ TW_GUARDED_BY(mutex_) = 0;  // items being run
  std::size_t in_stop_ TW_GUARDED_BY(mutex_) = 0;  // of those, in Stop

  std::vector<std::thread> threads_;
};

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_INTERNAL_WORKER_POOL_H_
