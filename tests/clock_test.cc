// SPDX-License-Identifier: Apache-2.0
#include "tickwheel/clock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>

#include "runtime_test_util.h"

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

// A clock and a sleeper of it, shared with a thread that may outlive the
// test if the sleeper never returns (the sleeper goes first).
struct SleepingClock {
  explicit SleepingClock(TimePoint start) : clock(start), sleeper(clock.NewSleeper()) {}
  ~SleepingClock() { sleeper.reset(); }
  ManualClock clock;
  std::unique_ptr<Sleeper> sleeper;
};

// Runs `fn` on a thread; whether it returned within testing::kPatience. A
// call that never returns fails the test instead of hanging it (the thread
// is left behind).
bool ReturnsInTime(std::function<void()> fn) {
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> returned = done->get_future();
  std::thread([fn = std::move(fn), done] {
    fn();
    done->set_value();
  }).detach();
  return returned.wait_for(testing::kPatience) == std::future_status::ready;
}

TEST(ManualClockTest, SleepReturnsAtOnceWhenTheDeadlineHasPassed) {
  auto s = std::make_shared<SleepingClock>(TimePoint(seconds(100)));
  EXPECT_TRUE(ReturnsInTime([s] { s->sleeper->SleepUntil(TimePoint(seconds(99)), s->sleeper->token()); }))
      << "SleepUntil a deadline before Now did not return";
  EXPECT_TRUE(ReturnsInTime([s] { s->sleeper->SleepUntil(TimePoint(seconds(100)), s->sleeper->token()); }))
      << "SleepUntil a deadline equal to Now did not return";
}

TEST(ManualClockTest, SleepReturnsAtOnceAfterAnEarlierWake) {
  auto s = std::make_shared<SleepingClock>(TimePoint(seconds(100)));
  const std::uint64_t token = s->sleeper->token();
  s->sleeper->Wake();  // before the sleep: must not be lost
  EXPECT_NE(s->sleeper->token(), token);
  EXPECT_TRUE(ReturnsInTime([s, token] { s->sleeper->SleepUntil(TimePoint::max(), token); }))
      << "a Wake before SleepUntil was lost";
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

// Advance waits for live sleepers only: one that was destroyed (here while
// blocked) is not waited for, and the others still are.
TEST(ManualClockTest, DestroyedSleepersAreNotWaitedFor) {
  auto clock = std::make_shared<ManualClock>();
  const TimePoint start = clock->Now();
  auto staying = std::make_shared<Ticker>(*clock, seconds(1));
  {
    Ticker gone(*clock, seconds(1));
    clock->Advance(seconds(1));
    EXPECT_EQ(gone.ticks(), 1);
  }
  // A wrong Advance would wait for the gone ticker: 60 s, then abort.
  EXPECT_TRUE(ReturnsInTime([clock, staying] { clock->Advance(seconds(1)); }))
      << "Advance waited for a destroyed sleeper";
  EXPECT_EQ(clock->Now(), start + seconds(2));
  EXPECT_EQ(staying->ticks(), 2);  // Advance still waited for this one
}

// One SleepUntil sleeps to the deadline (the contract lets it return early
// now and then, so callers loop; a loop that spins is what it must not be).
TEST(SystemClockTest, SleepsUntilTheDeadline) {
  Clock& clock = SystemClock::Instance();
  auto sleeper = clock.NewSleeper();
  const TimePoint start = clock.Now();
  const TimePoint deadline = start + milliseconds(20);
  int calls = 0;
  while (clock.Now() < deadline) {
    sleeper->SleepUntil(deadline, sleeper->token());
    ++calls;
  }
  EXPECT_LE(calls, 3) << "SleepUntil returned before its deadline " << calls << " times";
  // Generous: only an implementation that ignores the deadline misses it.
  EXPECT_LT(clock.Now() - start, seconds(10));
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
