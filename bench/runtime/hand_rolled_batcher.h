// SPDX-License-Identifier: Apache-2.0
// The batcher people write by hand: a mutex, a buffer, a queue of full
// batches and one consumer thread; flush at N tasks or after an interval.
// The peer of tickwheel::BulkExecutor in executor_bench.cc. (It has no
// back-pressure: a slow consumer lets the queue grow without bound.)
#ifndef TICKWHEEL_BENCH_RUNTIME_HAND_ROLLED_BATCHER_H_
#define TICKWHEEL_BENCH_RUNTIME_HAND_ROLLED_BATCHER_H_

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace tickwheel::bench {

template <typename T>
class HandRolledBatcher {
 public:
  HandRolledBatcher(std::function<void(std::vector<T>)> execute,
                    std::size_t max_tasks, std::chrono::milliseconds interval)
      : execute_(std::move(execute)),
        max_tasks_(max_tasks),
        interval_(interval),
        consumer_([this] { Run(); }) {}

  ~HandRolledBatcher() {
    Wait();
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    work_.notify_one();
    consumer_.join();
  }

  void Add(T task) {
    std::unique_lock lock(mutex_);
    buffer_.push_back(std::move(task));
    if (buffer_.size() < max_tasks_) return;
    queue_.push_back(std::exchange(buffer_, {}));
    lock.unlock();
    work_.notify_one();
  }

  // Returns once everything added before has been executed.
  void Wait() {
    std::unique_lock lock(mutex_);
    if (!buffer_.empty()) queue_.push_back(std::exchange(buffer_, {}));
    work_.notify_one();
    idle_.wait(lock, [&] { return queue_.empty() && !busy_; });
  }

 private:
  void Run() {
    std::unique_lock lock(mutex_);
    while (!stop_) {
      if (queue_.empty()) {
        work_.wait_for(lock, interval_);
        if (queue_.empty() && !buffer_.empty()) {
          queue_.push_back(std::exchange(buffer_, {}));
        }
        continue;
      }
      std::vector<T> batch = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
      lock.unlock();
      execute_(std::move(batch));
      lock.lock();
      busy_ = false;
      if (queue_.empty()) idle_.notify_all();
    }
  }

  const std::function<void(std::vector<T>)> execute_;
  const std::size_t max_tasks_;
  const std::chrono::milliseconds interval_;
  std::mutex mutex_;
  std::condition_variable work_;
  std::condition_variable idle_;
  std::vector<T> buffer_;             // guarded by mutex_
  std::deque<std::vector<T>> queue_;  // guarded by mutex_
  bool busy_ = false;                 // guarded by mutex_
  bool stop_ = false;                 // guarded by mutex_
  std::thread consumer_;
};

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_BENCH_RUNTIME_HAND_ROLLED_BATCHER_H_
