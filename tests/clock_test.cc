// SPDX-License-Identifier: Apache-2.0
#include "tickwheel/clock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>

namespace tickwheel {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(ManualClockTest, MovesOnlyForward) {
  ManualClock clock(TimePoint(seconds(100)));
  EXPECT_EQ(clock.Now(), TimePoint(seconds(100)));
  clock.Advance(seconds(5));
  EXPECT_EQ(clock.Now(), TimePoint(seconds(105)));
  clock.Advance(seconds(-50));
  clock.AdvanceTo(TimePoint(seconds(1)));
  EXPECT_EQ(clock.Now(), TimePoint(seconds(105)));
}

TEST(ManualClockTest, SleepReturnsAtOnceWhenTheDeadlineHasPassed) {
  ManualClock clock(TimePoint(seconds(100)));
  auto sleeper = clock.NewSleeper();
  sleeper->SleepUntil(TimePoint(seconds(99)), sleeper->token());
}

TEST(ManualClockTest, SleepReturnsAtOnceAfterAnEarlierWake) {
  ManualClock clock;
  auto sleeper = clock.NewSleeper();
  const std::uint64_t token = sleeper->token();
  sleeper->Wake();  // before the sleep: must not be lost
  sleeper->SleepUntil(TimePoint::max(), token);
}

// A thread that sleeps until its next deadline and counts each time it finds
// the deadline reached, like the runtime's timer threads do.
class Ticker {
 public:
  Ticker(Clock& clock, Duration period)
      : clock_(clock), period_(period), sleeper_(clock.NewSleeper()) {
    next_ = clock_.Now() + period_;
    thread_ = std::thread([this] { Run(); });
  }
  ~Ticker() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    sleeper_->Wake();
    thread_.join();
  }
  int ticks() const { return ticks_.load(); }

 private:
  void Run() {
    for (;;) {
      std::unique_lock lock(mutex_);
      if (stop_) return;
      while (clock_.Now() >= next_) {
        ++ticks_;
        next_ += period_;
      }
      const TimePoint next = next_;
      const std::uint64_t token = sleeper_->token();
      lock.unlock();
      sleeper_->SleepUntil(next, token);
    }
  }

  Clock& clock_;
  const Duration period_;
  std::unique_ptr<Sleeper> sleeper_;
  std::mutex mutex_;
  bool stop_ = false;     // guarded by mutex_
  TimePoint next_;        // guarded by mutex_
  std::atomic<int> ticks_{0};
  std::thread thread_;
};

TEST(ManualClockTest, AdvanceReturnsAfterSleepersHaveCaughtUp) {
  ManualClock clock;
  Ticker ticker(clock, seconds(1));
  clock.Advance(milliseconds(999));
  EXPECT_EQ(ticker.ticks(), 0);
  clock.Advance(milliseconds(1));
  EXPECT_EQ(ticker.ticks(), 1);  // no waiting: Advance waited for it
  for (int i = 0; i < 100; ++i) clock.Advance(milliseconds(500));
  EXPECT_EQ(ticker.ticks(), 51);
  clock.Advance(seconds(10));
  EXPECT_EQ(ticker.ticks(), 61);
}

TEST(ManualClockTest, DestroyedSleepersAreNotWaitedFor) {
  ManualClock clock;
  {
    Ticker ticker(clock, seconds(1));
    clock.Advance(seconds(1));
    EXPECT_EQ(ticker.ticks(), 1);
  }
  clock.Advance(seconds(1));  // must not wait for the gone ticker
  SUCCEED();
}

TEST(SystemClockTest, SleepsUntilTheDeadline) {
  Clock& clock = SystemClock::Instance();
  auto sleeper = clock.NewSleeper();
  const TimePoint deadline = clock.Now() + milliseconds(20);
  while (clock.Now() < deadline) sleeper->SleepUntil(deadline, sleeper->token());
  EXPECT_GE(clock.Now(), deadline);
}

TEST(SystemClockTest, WakeInterruptsASleep) {
  Clock& clock = SystemClock::Instance();
  auto sleeper = clock.NewSleeper();
  const std::uint64_t token = sleeper->token();
  std::thread waker([&] { sleeper->Wake(); });
  // Returns because of the wake, long before the deadline.
  sleeper->SleepUntil(clock.Now() + std::chrono::hours(1), token);
  EXPECT_NE(sleeper->token(), token);
  waker.join();
}

}  // namespace
}  // namespace tickwheel
