// SPDX-License-Identifier: Apache-2.0
// BlockingPool (common/blocking_pool.h): bounded, and a call that waited
// past its deadline is never run.
#include "common/blocking_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <future>
#include <mutex>

namespace tickwheel::server {
namespace {

using std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

// A call that blocks until Open().
class Gate {
 public:
  void Wait() {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return open_; });
  }
  void Open() {
    std::lock_guard lock(mutex_);
    open_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool open_ = false;
};

TEST(BlockingPoolTest, AFullQueueRefusesAndACallPastItsDeadlineNeverRuns) {
  BlockingPool pool({.threads = 1, .max_queued = 2});
  Gate gate;
  std::promise<void> started;
  ASSERT_TRUE(pool.Submit(SteadyClock::now() + std::chrono::hours(1), [&] {
    started.set_value();
    gate.Wait();
  }));
  started.get_future().wait();
  EXPECT_TRUE(pool.oldest_running().has_value());
  std::atomic<int> ran{0};
  // One that will be late, one that will not; then the queue is full.
  ASSERT_TRUE(pool.Submit(SteadyClock::now() + milliseconds(10), [&] { ran += 1; }));
  ASSERT_TRUE(pool.Submit(SteadyClock::now() + std::chrono::hours(1), [&] { ran += 10; }));
  EXPECT_FALSE(pool.Submit(SteadyClock::now() + std::chrono::hours(1), [&] { ran += 100; }));
  EXPECT_EQ(pool.refused(), 1u);
  EXPECT_EQ(pool.queued(), 2u);
  std::this_thread::sleep_for(milliseconds(20));  // the first queued one is now late
  gate.Open();
  for (int i = 0; i < 500 && ran.load() != 10; ++i) std::this_thread::sleep_for(milliseconds(2));
  EXPECT_EQ(ran.load(), 10);
  EXPECT_EQ(pool.expired(), 1u);
  pool.Stop();
  EXPECT_FALSE(pool.Submit(SteadyClock::now() + std::chrono::hours(1), [] {}));
}

TEST(BlockingPoolTest, StopDropsWhatIsQueuedAndWaitsForWhatRuns) {
  BlockingPool pool({.threads = 2, .max_queued = 100'000});
  Gate gate;
  std::atomic<int> finished{0}, dropped_ran{0};
  std::promise<void> a, b;
  ASSERT_TRUE(pool.Submit(SteadyClock::now() + std::chrono::hours(1), [&] { a.set_value(); gate.Wait(); ++finished; }));
  ASSERT_TRUE(pool.Submit(SteadyClock::now() + std::chrono::hours(1), [&] { b.set_value(); gate.Wait(); ++finished; }));
  a.get_future().wait();
  b.get_future().wait();
  ASSERT_TRUE(pool.Submit(SteadyClock::now() + std::chrono::hours(1), [&] { ++dropped_ran; }));
  // The running calls end once Stop has begun: a submit is refused then.
  std::thread opener([&] {
    while (pool.Submit(SteadyClock::now() + std::chrono::hours(1), [&] { ++dropped_ran; })) {
      std::this_thread::sleep_for(milliseconds(1));
    }
    gate.Open();
  });
  pool.Stop();
  opener.join();
  EXPECT_EQ(finished.load(), 2);
  EXPECT_EQ(dropped_ran.load(), 0);
}

}  // namespace
}  // namespace tickwheel::server
