// SPDX-License-Identifier: Apache-2.0
// BlockingPool: threads for calls that may block (a store read over the
// network), so that the threads that must stay responsive (the HTTP I/O
// threads) never make them. Its queue is bounded and every call has a
// deadline by which it must have started.
#ifndef TICKWHEEL_SERVER_COMMON_BLOCKING_POOL_H_
#define TICKWHEEL_SERVER_COMMON_BLOCKING_POOL_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <thread>
#include <vector>

#include "tickwheel/internal/mutex.h"

namespace tickwheel::server {

struct BlockingPoolOptions {
  unsigned threads = 8;         // calls running at once
  std::size_t max_queued = 256;  // calls waiting for a thread
};

// Calls run in the order they were submitted, each on one of `threads`
// threads. A call still queued at its deadline is dropped, never run (the
// caller has given up on it by then: it answered 503). A call that has
// started runs to its end, however long it takes; while all threads are in
// such calls, new ones queue up to `max_queued`, then are refused.
//
// Thread safety: every method from any thread. The calls run on the pool's
// threads and must not call Stop.
// Cost: one lock of the queue per call; no allocation beyond the call's
// std::function.
//
//   BlockingPool pool({.threads = 8, .max_queued = 256});
//   if (!pool.Submit(now + 10s, [&] { Read(); })) Refuse();
class BlockingPool {
 public:
  using SteadyTime = std::chrono::steady_clock::time_point;

  explicit BlockingPool(BlockingPoolOptions options = {});
  ~BlockingPool();  // Stop()

  // Queues `call`; false (and `call` is dropped) when the queue is full or
  // the pool has stopped.
  bool Submit(SteadyTime deadline, std::function<void()> call);

  // Drops what is queued, waits for the calls that are running, joins the
  // threads. Idempotent.
  void Stop();

  std::size_t queued() const;
  // When the longest-running call started; nullopt if none runs.
  std::optional<SteadyTime> oldest_running() const;
  // Calls dropped at their deadline, and refused because the queue was full.
  std::uint64_t expired() const;
  std::uint64_t refused() const;

 private:
  struct Call {
    SteadyTime deadline;
    std::function<void()> run;
  };
  void Loop(std::size_t index);

  const BlockingPoolOptions options_;
  mutable internal::Mutex mutex_;
  internal::CondVar cv_;
  std::deque<Call> queue_ TW_GUARDED_BY(mutex_);
  // Per thread: when its current call started (nullopt when idle).
  std::vector<std::optional<SteadyTime>> running_ TW_GUARDED_BY(mutex_);
  bool stopping_ TW_GUARDED_BY(mutex_) = false;
  std::uint64_t expired_ TW_GUARDED_BY(mutex_) = 0;
  std::uint64_t refused_ TW_GUARDED_BY(mutex_) = 0;
  std::vector<std::thread> threads_;  // the constructor and Stop only
  bool stopped_ = false;              // Stop ran (Stop's caller only)
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_COMMON_BLOCKING_POOL_H_
