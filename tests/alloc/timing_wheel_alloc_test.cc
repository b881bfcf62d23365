// SPDX-License-Identifier: Apache-2.0
// TimingWheel swept over its allocations: single and batch calls, Drain,
// Stop, and its timer thread (alloc_sweep.h says what every sweep checks).
#include "alloc/alloc_sweep.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "runtime_test_util.h"
#include "tickwheel/clock.h"
#include "tickwheel/timing_wheel.h"
#include "watchdog.h"

namespace tickwheel {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::Gate;
using testing::WithinDeadline;
using testing::alloc::FailOthers;

// ---------------------------------------------------------------------------
// TimingWheel.

class TimingWheelAllocTest : public ::testing::Test {
 protected:
  using Wheel = TimingWheel<int, Tracked>;
  struct Timer {
    int value;
    TimePoint due;
    friend bool operator==(const Timer&, const Timer&) = default;
  };
  using Model = std::map<int, Timer>;

  // Keys 0..9, due 10, 20, ..., 100 ms from now, in two shards; values
  // call back into the wheel when they are destroyed.
  void Make() {
    wheel_ = std::make_unique<Wheel>(
        milliseconds(1),
        [this](const int& key, const Tracked& v) {
          log_.Record({key, v.value});
        },
        TimingWheelOptions{.workers = 1, .shards = 2, .clock = &clock_});
    raw_ = wheel_.get();
    t0_ = clock_.Now();
    seen_ = log_.size();
    model_.clear();
    for (int k = 0; k < 10; ++k) Set(k, 100 + k, milliseconds(10 * (k + 1)));
  }
  void Set(int key, int value, Duration delay) {
    ASSERT_TRUE(wheel_->SetTimer(key, Tracked(value, &call_back_), delay));
    model_[key] = {value, clock_.Now() + delay};
  }
  Tracked Value(int v) { return Tracked(v, &call_back_); }
  TimePoint At(Duration d) const { return t0_ + d; }

  // Moves the clock through every due time of `a` and `b` (and past them)
  // and checks that each key ran exactly once, as `a` or as `b` says (for
  // keys `a` and `b` disagree on: a batch that threw may have made some
  // calls and not others), never early and never late.
  void ExpectRuns(const Model& a, const Model& b) {
    std::set<TimePoint> times;
    for (const auto& [k, t] : a) times.insert(t.due);
    for (const auto& [k, t] : b) times.insert(t.due);
    times.insert(clock_.Now() + milliseconds(200));
    for (TimePoint t : times) {
      clock_.AdvanceTo(t);
      Settle();
    }
    // Each ran at most once, stamped with the time it ran at.
    std::map<int, Timer> ran;
    const auto events = log_.events();
    for (std::size_t i = seen_; i < events.size(); ++i) {
      const auto& [key, value] = events[i].event;
      if (key < 0) continue;
      EXPECT_TRUE(ran.emplace(key, Timer{value, events[i].at}).second)
          << "key " << key << " ran twice";
    }
    seen_ = events.size();
    std::set<int> keys;
    for (const auto& [k, t] : a) keys.insert(k);
    for (const auto& [k, t] : b) keys.insert(k);
    for (const auto& [k, t] : ran) keys.insert(k);
    auto in = [](const Model& m, int k) -> std::optional<Timer> {
      auto it = m.find(k);
      return it == m.end() ? std::nullopt : std::optional<Timer>(it->second);
    };
    for (int k : keys) {
      const std::optional<Timer> got = in(ran, k);
      EXPECT_TRUE(got == in(a, k) || got == in(b, k))
          << "key " << k
          << (got ? " ran with value " + std::to_string(got->value) + " at " +
                        std::to_string((got->due - t0_).count()) + " ns"
                  : std::string(" did not run"));
    }
  }
  void Settle() {
    const int mark = ++sentinels_;
    ASSERT_TRUE(wheel_->SetTimer(-mark, Tracked(-mark), Duration::zero()));
    ASSERT_TRUE(log_.WaitFor(std::pair{-mark, -mark}));
  }

  ManualClock clock_;
  TimePoint t0_;
  testing::EventLog<std::pair<int, int>> log_{clock_};
  std::size_t seen_ = 0;
  int sentinels_ = 0;
  Model model_;
  Wheel* raw_ = nullptr;
  std::function<void()> call_back_ = [this] { raw_->size(); };
  std::unique_ptr<Wheel> wheel_;
};

TEST_F(TimingWheelAllocTest, SingleCallsEitherHappenOrChangeNothing) {
  WithinDeadline("the sweep", [&] {
    EXPECT_GT(Sweep("SetTimer of a new key", [&](long n) {
      Make();
      Model after = model_;
      after[20] = {200, At(milliseconds(15))};
      bool injected;
      const bool threw = Throws(n, injected, [&] {
        wheel_->SetTimer(20, Value(200), milliseconds(15));
      });
      EXPECT_EQ(wheel_->size(), threw ? 10u : 11u);
      ExpectRuns(threw ? model_ : after, threw ? model_ : after);
      wheel_.reset();
      return injected;
    }), 0);
    Sweep("SetTimer of a key that exists", [&](long n) {
      Make();
      Model after = model_;
      after[3] = {300, At(milliseconds(5))};
      bool injected;
      const bool threw = Throws(n, injected, [&] {
        wheel_->SetTimer(3, Value(300), milliseconds(5));
      });
      ExpectRuns(threw ? model_ : after, threw ? model_ : after);
      wheel_.reset();
      return injected;
    });
    Sweep("MoveTimer and RemoveTimer", [&](long n) {
      Make();
      Model after = model_;
      after[4] = {104, At(milliseconds(25))};
      after.erase(5);
      bool injected;
      bool moved = false, removed = false;
      const bool threw = Throws(n, injected, [&] {
        moved = wheel_->MoveTimer(4, milliseconds(25));
        removed = wheel_->RemoveTimer(5);
      });
      EXPECT_FALSE(threw);
      EXPECT_TRUE(moved && removed);
      ExpectRuns(after, after);
      wheel_.reset();
      return injected;
    });
  });
  EXPECT_EQ(live_values.load(), 0);
}

// A batch that runs out of memory part-way: each key's call was made
// entirely or not at all, and every call made wakes the timer thread as it
// should (new keys due at 5 ms, before anything else: before, the calls
// made earlier in the failing window were never notified and ran at 10 ms;
// and a key could get its new value without its timer moving).
TEST_F(TimingWheelAllocTest, BatchCallsMakeEachCallEntirelyOrNotAtAllAndWakeTheTimerThread) {
  WithinDeadline("the sweep", [&] {
    EXPECT_GT(Sweep("SetTimers", [&](long n) {
      Make();
      std::vector<int> keys;
      std::vector<Tracked> values;
      std::vector<Duration> delays;
      Model after = model_;
      for (int k = 30; k < 50; ++k) {  // new keys, due first
        keys.push_back(k);
        values.push_back(Value(k));
        delays.push_back(milliseconds(5));
        after[k] = {k, At(milliseconds(5))};
      }
      for (int k : {2, 8}) {  // keys that exist: new values, moved
        keys.push_back(k);
        values.push_back(Value(1000 + k));
        delays.push_back(milliseconds(3));
        after[k] = {1000 + k, At(milliseconds(3))};
      }
      bool injected;
      const bool threw = Throws(n, injected, [&] {
        wheel_->SetTimers(keys, values, delays);
      });
      if (!threw) {
        EXPECT_EQ(wheel_->size(), after.size());
      }
      values.clear();  // what a failed call left in it, while the wheel lives
      ExpectRuns(threw ? model_ : after, after);
      wheel_.reset();
      return injected;
    }), 0);
    Sweep("MoveTimers and RemoveTimers", [&](long n) {
      Make();
      const std::vector<int> move_keys = {0, 1, 99, 6};
      const std::vector<Duration> delays = {milliseconds(5), milliseconds(25),
                                            milliseconds(5), milliseconds(35)};
      const std::vector<int> remove_keys = {7, 98, 9};
      Model moved = model_;
      moved[0].due = At(milliseconds(5));
      moved[1].due = At(milliseconds(25));
      moved[6].due = At(milliseconds(35));
      Model after = moved;
      after.erase(7);
      after.erase(9);
      bool injected;
      int stage = 0;
      const bool threw = Throws(n, injected, [&] {
        EXPECT_EQ(wheel_->MoveTimers(move_keys, delays), 3u);
        stage = 1;
        EXPECT_EQ(wheel_->MoveTimers(std::vector<int>{3}, milliseconds(45)), 1u);
        stage = 2;
        EXPECT_EQ(wheel_->RemoveTimers(remove_keys), 2u);
        stage = 3;
      });
      if (stage >= 2) {
        moved[3].due = At(milliseconds(45));
        after[3].due = At(milliseconds(45));
      }
      if (!threw) {
        ExpectRuns(after, after);
      } else if (stage == 0) {
        ExpectRuns(model_, moved);
      } else {
        ExpectRuns(moved, moved);
      }
      wheel_.reset();
      return injected;
    });
  });
  EXPECT_EQ(live_values.load(), 0);
}

// Drain takes everything or, out of memory, nothing (before, a reserve
// that failed for a later shard lost the earlier shards' timers); Stop
// never fails.
TEST_F(TimingWheelAllocTest, DrainTakesAllOrNothingAndStopNeverFails) {
  WithinDeadline("the sweep", [&] {
    EXPECT_GT(Sweep("Drain", [&](long n) {
      Make();
      std::map<int, int> drained;
      bool injected;
      const bool threw = Throws(n, injected, [&] {
        wheel_->Drain([&](const int& k, const Tracked& v) {
          drained.emplace(k, v.value);  // fails too, now and then
        });
      });
      if (threw && drained.empty()) {
        EXPECT_EQ(wheel_->size(), 10u);
        ExpectRuns(model_, model_);
      } else {
        EXPECT_EQ(wheel_->size(), 0u);
        ExpectRuns({}, {});
      }
      wheel_.reset();
      return injected;
    }), 0);
    Sweep("Stop", [&](long n) {
      Make();
      bool injected;
      EXPECT_FALSE(Throws(n, injected, [&] { wheel_->Stop(); }));
      EXPECT_EQ(wheel_->size(), 0u);
      clock_.Advance(seconds(1));
      wheel_.reset();
      return injected;
    });
  });
  EXPECT_EQ(live_values.load(), 0);
}

// Drain over four shards with keys that own their memory (std::string, as
// a connection id would be: the timers' copies of the keys are taken out
// too, which is a second reservation): whichever allocation fails, Drain
// takes nothing, and every timer still fires once, with its value, at its
// time. Before, Drain reserved shard by shard: a reservation that failed
// for a later shard lost the timers it had already taken from the earlier
// ones (with that Drain put back, failing its allocation 2, the second
// shard's reservation, lost 11 of the 40 timers; the sweep of
// DrainTakesAllOrNothingAndStopNeverFails above fails on it too).
TEST(TimingWheelDrainAllocTest, DrainOverManyShardsTakesAllOrNothing) {
  using Timers = std::map<std::string, int>;  // key -> value
  ManualClock clock;
  WithinDeadline("the sweep", [&] {
    EXPECT_GT(Sweep("Drain", [&](long n) {
      testing::EventLog<std::pair<std::string, int>> log(clock);
      TimingWheel<std::string, Tracked> wheel(
          milliseconds(1),
          [&](const std::string& key, const Tracked& v) {
            log.Record({key, v.value});
          },
          TimingWheelOptions{.workers = 1, .shards = 4, .clock = &clock});
      const TimePoint t0 = clock.Now();
      Timers pending;
      for (int i = 0; i < 40; ++i) {
        // Short enough to be stored inline: copying one allocates nothing.
        const std::string key = "conn-" + std::to_string(i);
        EXPECT_TRUE(wheel.SetTimer(key, Tracked(i), milliseconds(10)));
        pending[key] = i;
      }
      std::vector<std::pair<std::string, int>> drained;
      drained.reserve(40);  // fn allocates nothing: the failures are Drain's
      bool injected;
      const bool threw = Throws(n, injected, [&] {
        EXPECT_TRUE(wheel.Drain([&](const std::string& k, const Tracked& v) {
          drained.emplace_back(k, v.value);
        }));
      });
      if (threw) {
        EXPECT_THAT(drained, ::testing::IsEmpty());
        EXPECT_EQ(wheel.size(), 40u);
      } else {
        EXPECT_EQ(Timers(drained.begin(), drained.end()), pending);
        EXPECT_EQ(wheel.size(), 0u);
      }
      // Whatever Drain did not take fires at 10 ms, once; a sentinel due
      // after it shows that everything before it has run.
      clock.Advance(milliseconds(10));
      EXPECT_TRUE(wheel.SetTimer("sentinel", Tracked(-1), Duration::zero()));
      EXPECT_TRUE(log.WaitFor({"sentinel", -1}));
      Timers fired;
      for (const auto& e : log.events()) {
        if (e.event.first == "sentinel") continue;
        EXPECT_TRUE(fired.emplace(e.event).second) << e.event.first << " twice";
        EXPECT_EQ(e.at, t0 + milliseconds(10)) << e.event.first;
      }
      EXPECT_EQ(fired, threw ? pending : Timers{});
      return injected;
    }), 0);
  });
  EXPECT_EQ(live_values.load(), 0);
}

// The timer thread runs out of memory k times while 400 keys fall due (20
// at each of 1..20 ms over two shards, so that the list of fired keys and
// the worker's queue must grow as they fire): each failure is reported to
// on_error and retried, and every key executes exactly once, with its
// value, never early. (TimerServiceAllocTest.TimerThreadAndWorkersOutOf...
// checks the same runtime under TimerService; this one goes through
// TimingWheel's shards, KeyedShard::Advance.) `execute` allocates nothing.
TEST(TimingWheelThreadsAllocTest, TimerThreadOutOfMemoryLosesNoKey) {
  constexpr int kKeys = 400;
  ManualClock clock;
  WithinDeadline("the sweep", [&] {
    for (long k = 1; k <= 10; ++k) {
      SCOPED_TRACE(std::to_string(k) + " failures on the library's threads");
      std::array<std::atomic<int>, kKeys> runs{};
      std::array<std::atomic<std::int64_t>, kKeys> at{};
      std::atomic<int> wrong_values{0};
      std::atomic<int> errors{0};
      Gate settled;
      TimingWheel<int, int> wheel(
          milliseconds(1),
          [&](const int& key, const int& value) {
            if (key < 0) {
              settled.Open();
              return;
            }
            if (value != 3 * key) ++wrong_values;
            at[key] = clock.Now().time_since_epoch().count();
            ++runs[key];
          },
          TimingWheelOptions{.workers = 1,
                             .shards = 2,
                             .clock = &clock,
                             .on_error =
                                 [&](std::exception_ptr) { ++errors; }});
      const TimePoint t0 = clock.Now();
      auto due = [&](int key) { return t0 + milliseconds(1 + key / 20); };
      for (int key = 0; key < kKeys; ++key) {
        ASSERT_TRUE(wheel.SetTimer(key, 3 * key, due(key) - t0));
      }
      {
        FailOthers fail(k);
        for (int t = 0; t < 40 && fail.failed() < k; ++t) {
          clock.Advance(milliseconds(1));
        }
        EXPECT_EQ(fail.failed(), k);
      }
      clock.Advance(milliseconds(30));  // past every retry
      // Everything due is queued by now; a key due at once runs after it.
      ASSERT_TRUE(wheel.SetTimer(-1, 0, Duration::zero()));
      ASSERT_TRUE(settled.Wait());
      for (int key = 0; key < kKeys; ++key) {
        EXPECT_EQ(runs[key].load(), 1) << "key " << key;
        EXPECT_GE(at[key].load(), due(key).time_since_epoch().count())
            << "key " << key << " ran early";
      }
      EXPECT_EQ(wrong_values.load(), 0);
      EXPECT_GE(errors.load(), 1);
      EXPECT_EQ(wheel.size(), 0u);
    }
  });
}

}  // namespace
}  // namespace tickwheel
