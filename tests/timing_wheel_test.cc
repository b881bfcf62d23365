// SPDX-License-Identifier: Apache-2.0
// TimingWheel on manual time: go-zero's timingwheel_test.go scenarios, and
// one test for each defect of go-zero's TimingWheel that tickwheel fixes.
#include "tickwheel/timing_wheel.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "runtime_test_util.h"

namespace tickwheel {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;
using testing::EventLog;
using testing::Gate;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

constexpr Duration I = seconds(1);  // the wheel's interval
constexpr int kSentinel = -1;

struct Fired {
  int key;
  int value;
  int tick;  // when execute ran, in intervals since the test started
  friend bool operator==(const Fired&, const Fired&) = default;
  friend std::ostream& operator<<(std::ostream& os, const Fired& f) {
    return os << "{key " << f.key << ", value " << f.value << ", tick "
              << f.tick << "}";
  }
};

class TimingWheelTest : public ::testing::Test {
 protected:
  void Make(std::size_t workers = 1) {
    wheel_ = std::make_unique<TimingWheel<int, int>>(
        I,
        [this](const int& key, const int& value) {
          log_.Record({key, value});
          if (on_execute_) on_execute_(key, value);
        },
        TimingWheelOptions{.workers = workers, .clock = &clock_});
  }

  // Moves time n intervals, settling after each, so every execute runs (and
  // is stamped) at the tick that fired it.
  void Tick(int n = 1) {
    for (int i = 0; i < n; ++i) {
      clock_.Advance(I);
      Settle();
    }
  }

  // Waits until everything handed to the (single) worker so far has run: a
  // sentinel due at once runs after it.
  void Settle() {
    const int mark = ++sentinels_;
    ASSERT_TRUE(wheel_->SetTimer(kSentinel, mark, nanoseconds(0)));
    ASSERT_TRUE(log_.WaitFor(std::pair{kSentinel, mark})) << "sentinel never ran";
  }

  // What fired (sentinels left out), stamped with whole intervals.
  std::vector<Fired> FiredSoFar() {
    std::vector<Fired> fired;
    for (const auto& e : log_.events()) {
      if (e.event.first == kSentinel) continue;
      const auto since = e.at - start_;
      EXPECT_EQ(since % I, Duration::zero()) << "fired between ticks";
      fired.push_back({e.event.first, e.event.second,
                       static_cast<int>(since / I)});
    }
    return fired;
  }

  ManualClock clock_;
  const TimePoint start_ = clock_.Now();
  EventLog<std::pair<int, int>> log_{clock_};
  std::function<void(int, int)> on_execute_;  // set before Make
  Gate release_;  // for callbacks that block; outlives the wheel
  std::unique_ptr<TimingWheel<int, int>> wheel_;  // destroyed first
  int sentinels_ = 0;
};

TEST_F(TimingWheelTest, RejectsBadArguments) {
  auto noop = [](const int&, const int&) {};
  EXPECT_THROW((TimingWheel<int, int>(nanoseconds(0), noop)),
               std::invalid_argument);
  EXPECT_THROW((TimingWheel<int, int>(-I, noop)), std::invalid_argument);
  EXPECT_THROW((TimingWheel<int, int>(I, nullptr)), std::invalid_argument);
  EXPECT_THROW(
      (TimingWheel<int, int>(I, noop, TimingWheelOptions{.workers = 0})),
      std::invalid_argument);
}

TEST_F(TimingWheelTest, SetTimerSoonFiresOnceOnTheFirstTick) {
  Make();
  ASSERT_TRUE(wheel_->SetTimer(1, 10, I / 2));
  EXPECT_EQ(wheel_->size(), 1u);
  Tick();
  Tick(5);
  EXPECT_THAT(FiredSoFar(), ElementsAre(Fired{1, 10, 1}));
}

TEST_F(TimingWheelTest, NeverFiresBeforeItsDelay) {
  Make();
  wheel_->SetTimer(1, 1, 5 * I);
  clock_.Advance(5 * I - nanoseconds(1));
  Settle();
  EXPECT_THAT(FiredSoFar(), IsEmpty());
  clock_.Advance(nanoseconds(1));
  Settle();
  EXPECT_THAT(FiredSoFar(), ElementsAre(Fired{1, 1, 5}));
}

// Found by timing_wheel_fuzz: now + Duration::max() overflowed (undefined
// behaviour; in practice a deadline in the past, so the timer fired at once).
TEST_F(TimingWheelTest, LongestDelaysNeverFireAndCanBeMovedBack) {
  Make();
  ASSERT_TRUE(wheel_->SetTimer(1, 1, Duration::max()));
  ASSERT_TRUE(wheel_->SetTimer(2, 2, Duration::max() - nanoseconds(1)));
  ASSERT_TRUE(wheel_->SetTimer(3, 3, I));
  ASSERT_TRUE(wheel_->MoveTimer(3, Duration::max()));
  Tick(3);
  clock_.Advance(std::chrono::hours(24 * 365));
  Settle();
  EXPECT_THAT(FiredSoFar(), IsEmpty());
  EXPECT_EQ(wheel_->size(), 3u);
  ASSERT_TRUE(wheel_->MoveTimer(2, I));
  Tick();
  ASSERT_EQ(FiredSoFar().size(), 1u);
  EXPECT_EQ(FiredSoFar()[0].key, 2);
}

TEST_F(TimingWheelTest, DelayBetweenTicksFiresAtTheNextTick) {
  Make();
  clock_.Advance(I / 4);          // calls happen between ticks
  wheel_->SetTimer(1, 1, 2 * I);  // due at 2.25 I: fires at the 3 I tick
  clock_.Advance(2 * I);          // 2.25 I: due, but not yet a tick
  Settle();
  EXPECT_THAT(FiredSoFar(), IsEmpty());
  clock_.Advance(3 * I / 4);
  Settle();
  EXPECT_THAT(FiredSoFar(), ElementsAre(Fired{1, 1, 3}));
}

TEST_F(TimingWheelTest, SetTimerTwiceFiresOnceWithTheSecondValue) {
  Make();
  wheel_->SetTimer(1, 1, 3 * I);
  wheel_->SetTimer(1, 2, 3 * I);
  EXPECT_EQ(wheel_->size(), 1u);
  Tick(10);
  EXPECT_THAT(FiredSoFar(), ElementsAre(Fired{1, 2, 3}));
}

TEST_F(TimingWheelTest, ZeroAndNegativeDelaysFireAtOnce) {
  Make();
  wheel_->SetTimer(1, 1, -seconds(5));
  wheel_->SetTimer(2, 2, Duration::zero());
  Settle();  // no clock movement needed
  EXPECT_THAT(FiredSoFar(),
              UnorderedElementsAre(Fired{1, 1, 0}, Fired{2, 2, 0}));
}

TEST_F(TimingWheelTest, MoveTimerLaterFiresOnlyAtTheNewTime) {
  Make();
  wheel_->SetTimer(1, 1, 3 * I);
  ASSERT_TRUE(wheel_->MoveTimer(1, 7 * I));
  Tick(12);
  EXPECT_THAT(FiredSoFar(), ElementsAre(Fired{1, 1, 7}));
}

TEST_F(TimingWheelTest, MoveTimerEarlierFiresAtTheNewTime) {
  Make();
  wheel_->SetTimer(1, 1, 10 * I);
  Tick();
  ASSERT_TRUE(wheel_->MoveTimer(1, 2 * I));
  Tick(15);
  EXPECT_THAT(FiredSoFar(), ElementsAre(Fired{1, 1, 3}));
}

TEST_F(TimingWheelTest, MoveTimerSoonRunsOnceAndNotAgainAtTheOldTime) {
  // go-zero runs execute at once for a move below the interval but leaves
  // the entry in place, so it fires again at the old time.
  Make();
  wheel_->SetTimer(1, 1, 5 * I);
  wheel_->SetTimer(2, 2, 5 * I);
  Tick();
  ASSERT_TRUE(wheel_->MoveTimer(1, I / 2));  // next tick
  ASSERT_TRUE(wheel_->MoveTimer(2, Duration::zero()));  // at once
  Settle();
  Tick(10);
  EXPECT_THAT(FiredSoFar(), ElementsAre(Fired{2, 2, 1}, Fired{1, 1, 2}));
}

TEST_F(TimingWheelTest, MoveOrRemoveOfAMissingKeyReturnsFalse) {
  Make();
  EXPECT_FALSE(wheel_->MoveTimer(1, I));
  EXPECT_FALSE(wheel_->RemoveTimer(1));
  wheel_->SetTimer(1, 1, I);
  Tick();
  EXPECT_FALSE(wheel_->MoveTimer(1, I)) << "fired keys are gone";
  EXPECT_FALSE(wheel_->RemoveTimer(1));
}

TEST_F(TimingWheelTest, RemovedTimerNeverFires) {
  Make();
  wheel_->SetTimer(1, 1, 2 * I);
  wheel_->SetTimer(2, 2, 2 * I);
  EXPECT_TRUE(wheel_->RemoveTimer(1));
  EXPECT_FALSE(wheel_->RemoveTimer(1));
  EXPECT_EQ(wheel_->size(), 1u);
  Tick(5);
  EXPECT_THAT(FiredSoFar(), ElementsAre(Fired{2, 2, 2}));
}

// go-zero defect: after 4 ticks, Set(10I) then Move(2I) fired at +12I.
TEST_F(TimingWheelTest, MoveEarlierAfterSomeTicksIsNotACircleLate) {
  Make();
  Tick(4);
  wheel_->SetTimer(1, 1, 10 * I);
  wheel_->MoveTimer(1, 2 * I);
  Tick(20);
  EXPECT_THAT(FiredSoFar(), ElementsAre(Fired{1, 1, 6}));
}

// go-zero defect: after 6 ticks, Set(3I) then Move(20I) fired at +10I.
TEST_F(TimingWheelTest, MoveLaterAfterSomeTicksIsNotACircleEarly) {
  Make();
  Tick(6);
  wheel_->SetTimer(1, 1, 3 * I);
  wheel_->MoveTimer(1, 20 * I);
  Tick(25);
  EXPECT_THAT(FiredSoFar(), ElementsAre(Fired{1, 1, 26}));
}

// go-zero's regression: set 8, 6 ticks, move 7, 3 ticks, remove, 30 ticks.
TEST_F(TimingWheelTest, MoveThenRemoveNeverFires) {
  Make();
  wheel_->SetTimer(1, 1, 8 * I);
  Tick(6);
  wheel_->MoveTimer(1, 7 * I);
  Tick(3);
  EXPECT_TRUE(wheel_->RemoveTimer(1));
  Tick(30);
  EXPECT_THAT(FiredSoFar(), IsEmpty());
}

// The tables of go-zero's tests, swept: after `elapsed` ticks, set a key,
// wait `gap` ticks, move it (once or twice). It must fire exactly once, at
// the last move's time. Keys of one elapsed value share one wheel.
TEST_F(TimingWheelTest, ElapsedSetMoveTablesFireAtTheLastMove) {
  for (int elapsed : {0, 1, 4, 6, 9}) {
    SCOPED_TRACE("elapsed " + std::to_string(elapsed));
    const std::size_t first_event = log_.size();
    Make();
    const TimePoint begin = clock_.Now();
    struct Case {
      int set, gap, move, move_again;  // move_again 0: no second move
    };
    std::map<int, Case> cases;
    int key = 0;
    for (int set = 2; set <= 14; ++set) {
      for (int gap : {0, 1}) {
        for (int move = 1; move <= 16; move += 1 + (move > 8)) {
          for (int move_again : {0, 3, 11}) {
            cases[++key] = {set, gap, move, move_again};
          }
        }
      }
    }
    Tick(elapsed);
    for (auto& [k, c] : cases) wheel_->SetTimer(k, k, c.set * I);
    for (int gap : {0, 1}) {
      if (gap == 1) Tick();
      for (auto& [k, c] : cases) {
        if (c.gap != gap) continue;
        ASSERT_TRUE(wheel_->MoveTimer(k, c.move * I));
        if (c.move_again != 0) {
          ASSERT_TRUE(wheel_->MoveTimer(k, c.move_again * I));
        }
      }
    }
    Tick(20);
    std::map<int, std::vector<int>> fired_at;
    const auto events = log_.events();
    for (std::size_t i = first_event; i < events.size(); ++i) {
      const auto& e = events[i];
      if (e.event.first == kSentinel) continue;
      fired_at[e.event.first].push_back(
          static_cast<int>((e.at - begin) / I) - elapsed);
    }
    for (auto& [k, c] : cases) {
      const int expected = c.gap + (c.move_again != 0 ? c.move_again : c.move);
      EXPECT_THAT(fired_at[k], ElementsAre(expected))
          << "set " << c.set << " gap " << c.gap << " move " << c.move
          << " again " << c.move_again;
    }
    wheel_.reset();
  }
}

TEST_F(TimingWheelTest, DrainReturnsExactlyThePendingPairs) {
  Make();
  wheel_->SetTimer(1, 10, I);
  wheel_->SetTimer(2, 20, 3 * I);
  wheel_->SetTimer(3, 30, 5 * I);
  Tick();
  std::set<std::pair<int, int>> drained;
  ASSERT_TRUE(wheel_->Drain(
      [&](const int& k, const int& v) { drained.insert({k, v}); }));
  EXPECT_EQ(drained, (std::set<std::pair<int, int>>{{2, 20}, {3, 30}}));
  EXPECT_EQ(wheel_->size(), 0u);
  drained.clear();
  ASSERT_TRUE(wheel_->Drain(
      [&](const int& k, const int& v) { drained.insert({k, v}); }));
  EXPECT_THAT(drained, IsEmpty());
  Tick(10);
  EXPECT_THAT(FiredSoFar(), ElementsAre(Fired{1, 10, 1}));
}

// go-zero defect: Drain left the key map full, so a drained key set again
// never fired.
TEST_F(TimingWheelTest, DrainedKeySetAgainFires) {
  Make();
  wheel_->SetTimer(1, 1, 3 * I);
  wheel_->Drain([](const int&, const int&) {});
  ASSERT_TRUE(wheel_->SetTimer(1, 2, 2 * I));
  Tick(5);
  EXPECT_THAT(FiredSoFar(), ElementsAre(Fired{1, 2, 2}));
}

// go-zero defect: a second Stop panicked.
TEST_F(TimingWheelTest, SecondStopIsHarmlessAndLaterCallsReturnFalse) {
  Make();
  wheel_->SetTimer(1, 1, 3 * I);
  wheel_->Stop();
  wheel_->Stop();
  EXPECT_FALSE(wheel_->SetTimer(2, 2, I));
  EXPECT_FALSE(wheel_->MoveTimer(1, I));
  EXPECT_FALSE(wheel_->RemoveTimer(1));
  EXPECT_FALSE(wheel_->Drain([](const int&, const int&) {}));
  EXPECT_EQ(wheel_->size(), 0u);
  clock_.Advance(5 * I);  // the timer thread is gone: no waiting for it
  EXPECT_THAT(FiredSoFar(), IsEmpty());
}

TEST_F(TimingWheelTest, ExecuteMayCallTheWheel) {
  on_execute_ = [this](int key, int value) {
    if (key == 1 && value < 3) wheel_->SetTimer(1, value + 1, I);
  };
  Make();
  wheel_->SetTimer(1, 1, I);
  for (int i = 0; i < 5; ++i) {
    Tick();
  }
  EXPECT_THAT(FiredSoFar(), ElementsAre(Fired{1, 1, 1}, Fired{1, 2, 2},
                                        Fired{1, 3, 3}));
}

TEST_F(TimingWheelTest, StopFromInsideExecuteReturns) {
  on_execute_ = [this](int key, int) {
    if (key == 1) {
      wheel_->Stop();  // must not wait for itself
      log_.Record({2, 2});
    }
  };
  Make();
  wheel_->SetTimer(1, 1, I);
  clock_.Advance(I);
  EXPECT_TRUE(log_.WaitForCount(2));  // the execute record, then "returned"
}

TEST_F(TimingWheelTest, StopWaitsForRunningExecute) {
  std::atomic<bool> finished{false};
  on_execute_ = [&](int key, int) {
    if (key != 1) return;
    release_.Wait();
    finished = true;
  };
  Make();
  wheel_->SetTimer(1, 1, I);
  clock_.Advance(I);
  ASSERT_TRUE(log_.WaitForCount(1));  // execute is running, blocked
  std::atomic<bool> stop_returned{false};
  std::atomic<bool> finished_before_stop_returned{false};
  std::thread stopper([&] {
    wheel_->Stop();
    finished_before_stop_returned = finished.load();
    stop_returned = true;
  });
  // Stop cannot return while execute is blocked. (If it wrongly did, it
  // would do so well within this time.)
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_FALSE(stop_returned);
  release_.Open();
  stopper.join();
  EXPECT_TRUE(finished_before_stop_returned);
}

TEST_F(TimingWheelTest, SlowExecuteDoesNotHoldUpOthersBeyondTheWorkerCount) {
  on_execute_ = [this](int key, int) {
    if (key == 1) release_.Wait();
  };
  Make(/*workers=*/2);
  wheel_->SetTimer(1, 1, I);
  wheel_->SetTimer(2, 2, 2 * I);
  wheel_->SetTimer(3, 3, 3 * I);
  clock_.Advance(3 * I);
  // Key 1 is stuck on one worker; 2 and 3 run on the other.
  EXPECT_TRUE(log_.WaitForCount(3));
  release_.Open();
}

TEST_F(TimingWheelTest, EachKeyFiresOnceWithItsOwnValue) {
  Make(/*workers=*/4);
  for (int k = 0; k < 50; ++k) wheel_->SetTimer(k, k * 10, (k % 5 + 1) * I);
  clock_.Advance(6 * I);
  ASSERT_TRUE(log_.WaitForCount(50));
  clock_.Advance(6 * I);
  wheel_->Stop();  // waits for stragglers
  std::map<int, std::vector<int>> values;
  for (const auto& e : log_.events()) values[e.event.first].push_back(e.event.second);
  ASSERT_EQ(values.size(), 50u);
  for (auto& [k, v] : values) EXPECT_THAT(v, ElementsAre(k * 10)) << k;
}

}  // namespace
}  // namespace tickwheel
