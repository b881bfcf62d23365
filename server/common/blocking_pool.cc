// SPDX-License-Identifier: Apache-2.0
#include "common/blocking_pool.h"

#include <algorithm>

namespace tickwheel::server {

BlockingPool::BlockingPool(BlockingPoolOptions options) : options_(options) {
  const unsigned n = std::max(1u, options_.threads);
  {
    internal::MutexLock lock(mutex_);
    running_.assign(n, std::nullopt);
  }
  for (unsigned i = 0; i < n; ++i) threads_.emplace_back([this, i] { Loop(i); });
}

BlockingPool::~BlockingPool() { Stop(); }

bool BlockingPool::Submit(SteadyTime deadline, std::function<void()> call) {
  internal::MutexLock lock(mutex_);
  if (stopping_ || queue_.size() >= options_.max_queued) {
    ++refused_;
    return false;
  }
  queue_.push_back({deadline, std::move(call)});
  cv_.Signal();
  return true;
}

void BlockingPool::Loop(std::size_t index) {
  for (;;) {
    std::function<void()> run;
    {
      internal::MutexLock lock(mutex_);
      running_[index].reset();
      while (!stopping_ && queue_.empty()) cv_.Wait(mutex_);
      if (stopping_) return;
      const SteadyTime now = std::chrono::steady_clock::now();
      Call call = std::move(queue_.front());
      queue_.pop_front();
      if (call.deadline <= now) {
        ++expired_;
        // Destroyed outside the lock: its captures may be anything.
        lock.Unlock();
        call.run = nullptr;
        continue;
      }
      running_[index] = now;
      run = std::move(call.run);
    }
    run();
  }
}

void BlockingPool::Stop() {
  if (stopped_) return;
  stopped_ = true;
  std::deque<Call> dropped;
  {
    internal::MutexLock lock(mutex_);
    stopping_ = true;
    dropped.swap(queue_);
  }
  cv_.SignalAll();
  for (std::thread& t : threads_) t.join();
}

std::size_t BlockingPool::queued() const {
  internal::MutexLock lock(mutex_);
  return queue_.size();
}

std::optional<BlockingPool::SteadyTime> BlockingPool::oldest_running() const {
  internal::MutexLock lock(mutex_);
  std::optional<SteadyTime> oldest;
  for (const auto& started : running_) {
    if (started && (!oldest || *started < *oldest)) oldest = started;
  }
  return oldest;
}

std::uint64_t BlockingPool::expired() const {
  internal::MutexLock lock(mutex_);
  return expired_;
}

std::uint64_t BlockingPool::refused() const {
  internal::MutexLock lock(mutex_);
  return refused_;
}

}  // namespace tickwheel::server
