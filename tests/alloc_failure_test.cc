// SPDX-License-Identifier: Apache-2.0
// Allocation failures, swept: for each public operation of the library, the
// operation's first allocation fails, then its second, and so on until it
// completes without a failure (alloc_injector.h). Each time: the call did
// what it says, or threw std::bad_alloc having changed nothing (or gave the
// weaker guarantee its header documents); no thread terminated; nothing
// accepted was lost or run twice; the object went on working; and no user
// code ran under a lock of the library (values and callbacks here call back
// into the object from their destructors, and the sweeps run under a
// watchdog). Failures on the library's own threads (timer threads, workers,
// flushers) are injected with FailOthers.
#define TICKWHEEL_DEFINE_ALLOC_INJECTOR
#include "alloc_injector.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "runtime_test_util.h"
#include "tickwheel/cache.h"
#include "tickwheel/clock.h"
#include "tickwheel/executors/bulk_executor.h"
#include "tickwheel/executors/chunk_executor.h"
#include "tickwheel/executors/delay_executor.h"
#include "tickwheel/executors/periodical_executor.h"
#include "tickwheel/internal/timer_shard.h"
#include "tickwheel/timer_service.h"
#include "tickwheel/timing_wheel.h"
#include "tickwheel/wheel.h"
#include "watchdog.h"

namespace tickwheel {
namespace {

using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;
using testing::Gate;
using testing::WithinDeadline;
using testing::alloc::FailNth;
using testing::alloc::FailOthers;

// The failed checks of the running test so far.
int FailedChecks() {
  const ::testing::TestResult* result =
      ::testing::UnitTest::GetInstance()->current_test_info()->result();
  int failed = 0;
  for (int i = 0; i < result->total_part_count(); ++i) {
    if (result->GetTestPartResult(i).failed()) ++failed;
  }
  return failed;
}

// Sweeps one call over its allocations: attempt(n) builds a fresh object,
// makes the call with FailNth(n) armed around it alone, checks what the
// call promises, and returns whether the n-th allocation came (and failed).
// Stops at the first n that the call did not reach, or at the first check
// of this sweep that failed (one sweep's failure does not cut the next
// sweep of the same test short). Returns that n: how many allocations the
// call made.
template <typename Attempt>
long Sweep(const std::string& what, Attempt attempt) {
  const int failed_before = FailedChecks();
  for (long n = 0; n < 20'000; ++n) {
    SCOPED_TRACE(what + ", allocation " + std::to_string(n) + " failing");
    const bool failed = attempt(n);
    if (FailedChecks() != failed_before) return n;
    if (!failed) return n;
  }
  ADD_FAILURE() << what << ": more than 20000 allocations";
  return -1;
}

// Runs `call` with this thread's n-th allocation failing; true if the call
// threw std::bad_alloc. `injected` says whether the n-th allocation came.
template <typename Call>
bool Throws(long n, bool& injected, Call call) {
  FailNth fail(n);
  bool threw = false;
  try {
    call();
  } catch (const std::bad_alloc&) {
    threw = true;
  }
  injected = fail.failed();
  return threw;
}

TEST(AllocInjectorTest, InjectorIsInUse) {
  bool threw = false;
  {
    FailNth fail(1);
    try {
      delete new int(1);  // the 0th
      ::operator delete(::operator new(64, std::align_val_t{64}),
                        std::align_val_t{64});  // the 1st: fails
    } catch (const std::bad_alloc&) {
      threw = true;
    }
  }
  EXPECT_TRUE(threw) << "the replaced operator new is not the one called";
  std::atomic<bool> other_threw{false};
  {
    FailOthers fail(1);
    std::thread other([&] {
      try {
        delete new int(2);
      } catch (const std::bad_alloc&) {
        other_threw = true;
      }
    });
    other.join();
  }
  EXPECT_TRUE(other_threw);
}

// A value that calls back into its container when it goes (through
// `callback`), and counts the values alive.
std::atomic<long> live_values{0};
struct Tracked {
  int value = 0;
  std::function<void()>* callback = nullptr;  // not owned
  explicit Tracked(int v, std::function<void()>* cb = nullptr)
      : value(v), callback(cb) {
    ++live_values;
  }
  Tracked(Tracked&& other) noexcept
      : value(other.value), callback(std::exchange(other.callback, nullptr)) {
    ++live_values;
  }
  Tracked& operator=(Tracked&& other) noexcept {
    value = other.value;
    callback = std::exchange(other.callback, nullptr);
    return *this;
  }
  Tracked(const Tracked& other) : value(other.value) { ++live_values; }
  ~Tracked() {
    --live_values;
    if (callback != nullptr && *callback) (*callback)();
  }
};

// What ran, without allocating (the library's threads may be failing
// allocations while callbacks record): per label, the number of runs and
// the clock's time at the last one.
class RunCounts {
 public:
  static constexpr int kLabels = 64;
  explicit RunCounts(const Clock& clock) : clock_(clock) {}
  void Ran(int label) {
    const std::int64_t now = clock_.Now().time_since_epoch().count();
    std::int64_t none = 0;
    first_at_[label].compare_exchange_strong(none, now);
    at_[label] = now;
    ++runs_[label];
  }
  int runs(int label) const { return runs_[label].load(); }
  void Reset() {
    for (auto& r : runs_) r = 0;
    for (auto& a : at_) a = 0;
    for (auto& a : first_at_) a = 0;
  }
  // The time of the last run of `label`, and of the first.
  TimePoint at(int label) const { return TimePoint(Duration(at_[label].load())); }
  TimePoint first_at(int label) const {
    return TimePoint(Duration(first_at_[label].load()));
  }

 private:
  const Clock& clock_;
  std::array<std::atomic<int>, kLabels> runs_{};
  std::array<std::atomic<std::int64_t>, kLabels> at_{};
  std::array<std::atomic<std::int64_t>, kLabels> first_at_{};
};

// ---------------------------------------------------------------------------
// Wheel<T>: the core.

TEST(WheelAllocTest, EveryCallKeepsItsGuaranteeOutOfMemory) {
  const TimePoint origin{};
  using std::chrono::nanoseconds;
  // A wheel with timers on several levels, and 64 queued moves (the next
  // Reschedule or Advance applies them, which allocates).
  struct Fixture {
    Wheel<Tracked> wheel{nanoseconds(1), TimePoint{}};
    std::map<int, std::int64_t> due;  // label -> deadline (ns)
    std::vector<TimerId> ids;
  };
  auto make = [&] {
    auto f = std::make_unique<Fixture>();
    for (int i = 0; i < 70; ++i) {
      const std::int64_t d = 1'000'000 + 1000 * i;
      f->ids.push_back(f->wheel.Schedule(origin + nanoseconds(d), Tracked(i)));
      f->due[i] = d;
    }
    for (int i = 0; i < 64; ++i) {  // earlier than their slots: queued
      f->wheel.Reschedule(f->ids[i], origin + nanoseconds(100 + 3 * i));
      f->due[i] = 100 + 3 * i;
    }
    return f;
  };
  // Drains the wheel: every timer fires once, at its deadline.
  auto drain = [&](Fixture& f) {
    ASSERT_NO_THROW(f.wheel.CheckInvariants());
    std::map<int, std::int64_t> fired;
    std::int64_t now = 0;
    while (auto next = f.wheel.NextDeadline()) {
      now = std::max(now + 1, next->time_since_epoch().count());
      f.wheel.Advance(origin + nanoseconds(now),
                      [&](Tracked t) { fired[t.value] = now; });
    }
    EXPECT_EQ(fired, f.due);
  };
  EXPECT_GT(Sweep("Schedule", [&](long n) {
    auto f = make();
    bool injected;
    std::optional<TimerId> id;
    const bool threw = Throws(n, injected, [&] {
      id = f->wheel.Schedule(origin + nanoseconds(50), Tracked(100));
    });
    if (!threw) f->due[100] = 50;
    EXPECT_EQ(f->wheel.size(), f->due.size());
    drain(*f);
    return injected;
  }), 0);
  EXPECT_GT(Sweep("Reschedule", [&](long n) {
    auto f = make();
    bool injected;
    const bool threw = Throws(n, injected, [&] {
      f->wheel.Reschedule(f->ids[65], origin + nanoseconds(70));
    });
    if (!threw) f->due[65] = 70;
    drain(*f);
    return injected;
  }), 0);
  EXPECT_GT(Sweep("Advance", [&](long n) {
    auto f = make();
    bool injected;
    // Room for every timer first: on_expire must not allocate, or the
    // failure injected is its own, and a throwing on_expire consumes the
    // timer it was given (as documented), which is not what is swept here.
    std::vector<int> fired;
    fired.reserve(f->due.size());
    const bool threw = Throws(n, injected, [&] {
      f->wheel.Advance(origin + nanoseconds(150),
                       [&](Tracked t) { fired.push_back(t.value); });
    });
    // Out of memory, Advance throws before firing anything (applying the
    // queued moves) or after firing what was due before the timer it could
    // not re-file; either way what it fired was due, and the rest is left
    // for the next Advance (drain), to fire once each.
    for (int v : fired) {
      EXPECT_LE(f->due[v], 150) << "label " << v << " fired early";
      f->due.erase(v);
    }
    if (!threw) {
      for (const auto& [label, due] : f->due) {
        EXPECT_GT(due, 150) << "label " << label << " was due and not fired";
      }
    }
    drain(*f);
    return injected;
  }), 0);
  Sweep("NextDeadline and Cancel", [&](long n) {
    auto f = make();
    bool injected;
    std::optional<TimePoint> next;
    const bool threw = Throws(n, injected, [&] {
      next = f->wheel.NextDeadline();
      EXPECT_TRUE(f->wheel.Cancel(f->ids[69]));
    });
    EXPECT_FALSE(threw);
    EXPECT_TRUE(next && *next <= origin + nanoseconds(100));
    f->due.erase(69);
    drain(*f);
    return injected;
  });
  EXPECT_GT(Sweep("Reserve", [&](long n) {
    auto f = make();
    bool injected;
    Throws(n, injected, [&] { f->wheel.Reserve(100'000); });
    drain(*f);
    return injected;
  }), 0);
  EXPECT_EQ(live_values.load(), 0);
}

// ---------------------------------------------------------------------------
// TimerService.

class TimerServiceAllocTest : public ::testing::Test {
 protected:
  void Make() {
    service_ = std::make_unique<TimerService>(TimerServiceOptions{
        .tick = milliseconds(1),
        .workers = 1,
        .shards = 1,
        .clock = &clock_,
        .on_error = [this](std::exception_ptr) { ++errors_; }});
    raw_ = service_.get();
  }
  // A callback that records a run of `label`, and calls into the service
  // when it is destroyed (under no lock, or the sweep deadlocks).
  TimerService::Callback Label(int label) {
    // raw_, not service_: while the service is being destroyed, service_
    // is null already.
    return [this, label, hook = std::make_shared<testing::OnDestroy>(
                             [this] { raw_->size(); })] {
      runs_.Ran(label);
    };
  }
  // Makes a service whose shard has a full queue of re-files: 70 one-shots
  // at 500 + i ms (label label_of(i)) and one at 100 ms (label 61) that the
  // timer thread sleeps until; then 64 of the 70 moved to 200 ms, earlier
  // than their slots (so the wheel queues their re-files) and later than
  // 100 ms (so the timer thread is not woken to apply them). The next
  // Reschedule or Cancel finds the queue full and applies it: it allocates.
  // (Without the timer at 100 ms and the wait for the timer thread to sleep,
  // the timer thread applied the queue now and then, racing the call: the
  // Reschedule sweep saw no allocation, about 1 run in 20.)
  template <typename LabelOf>
  std::vector<TimerId> MakeWithAFullQueue(LabelOf label_of) {
    Make();
    runs_.Reset();
    std::vector<TimerId> ids;
    for (int i = 0; i < 70; ++i) {
      ids.push_back(service_->After(milliseconds(500 + i), Label(label_of(i))));
    }
    service_->After(milliseconds(100), Label(61));
    // Returns once the timer thread has read the new time and sleeps again,
    // every wake-up the adds asked for consumed. (Not AdvanceTo(Now()): a
    // sleeper woken but not yet running still counts as blocked at the
    // time it read, which is not earlier than a time that did not move.)
    clock_.Advance(milliseconds(1));
    for (int i = 0; i < 64; ++i) {
      service_->Reschedule(ids[i], milliseconds(200));
    }
    return ids;
  }
  // Waits until everything handed out so far has run (one worker).
  void Settle() {
    Gate done;
    ASSERT_TRUE(service_->After(Duration::zero(), [&] { done.Open(); }).valid());
    ASSERT_TRUE(done.Wait());
  }
  void Advance(Duration d) {
    clock_.Advance(d);
    Settle();
  }
  TimePoint Since(Duration d) const { return start_ + d; }

  ManualClock clock_;
  const TimePoint start_ = clock_.Now();
  RunCounts runs_{clock_};
  std::atomic<int> errors_{0};
  TimerService* raw_ = nullptr;
  std::unique_ptr<TimerService> service_;
};

TEST_F(TimerServiceAllocTest, AddsEitherAddOrChangeNothing) {
  WithinDeadline("the sweep", [&] {
    for (int kind = 0; kind < 3; ++kind) {
      EXPECT_GT(Sweep("add kind " + std::to_string(kind), [&](long n) {
        Make();
        runs_.Reset();
        const TimePoint t0 = clock_.Now();
        service_->After(milliseconds(5), Label(1));
        service_->Every(milliseconds(7), Label(2));
        bool injected;
        TimerId id;
        const bool threw = Throws(n, injected, [&] {
          if (kind == 0) id = service_->After(milliseconds(10), Label(3));
          if (kind == 1) id = service_->At(t0 + milliseconds(10), Label(3));
          if (kind == 2) id = service_->Every(milliseconds(10), Label(3));
        });
        EXPECT_EQ(service_->size(), threw ? 2u : 3u);
        EXPECT_EQ(id.valid(), !threw);
        Advance(milliseconds(10));
        EXPECT_EQ(runs_.runs(1), 1);
        EXPECT_EQ(runs_.runs(2), 1);
        EXPECT_EQ(runs_.runs(3), threw ? 0 : 1);
        if (!threw) {
          EXPECT_EQ(runs_.at(3), t0 + milliseconds(10));
        }
        service_.reset();
        return injected;
      }), 0);
    }
  });
}

TEST_F(TimerServiceAllocTest, RescheduleMovesOrChangesNothingAndCancelNeverThrows) {
  WithinDeadline("the sweep", [&] {
    EXPECT_GT(Sweep("Reschedule", [&](long n) {
      const std::vector<TimerId> ids =
          MakeWithAFullQueue([](int i) { return i % 60; });
      bool injected;
      const bool threw = Throws(n, injected, [&] {
        service_->Reschedule(ids[65], milliseconds(20));
      });
      Advance(milliseconds(20));
      EXPECT_EQ(runs_.runs(5), threw ? 0 : 1);  // label of ids[65]
      Advance(milliseconds(600));
      EXPECT_EQ(runs_.runs(5), 2);  // ids[5] and ids[65]
      EXPECT_EQ(runs_.runs(61), 1);
      service_.reset();
      return injected;
    }), 0);
    Sweep("Cancel", [&](long n) {
      const std::vector<TimerId> ids =
          MakeWithAFullQueue([](int) { return 1; });
      bool injected;
      bool cancelled = false;
      EXPECT_FALSE(Throws(n, injected, [&] { cancelled = service_->Cancel(ids[66]); }));
      EXPECT_TRUE(cancelled);
      Advance(milliseconds(600));
      EXPECT_EQ(runs_.runs(1), 69);
      EXPECT_EQ(runs_.runs(61), 1);
      service_.reset();
      return injected;
    });
  });
}

// Stop alone (before, only the destructor's Stop was swept, and only with
// the failures on the library's threads): it never throws, discards every
// timer that has not started (their callbacks, which call the service from
// their destructors, are destroyed under no lock), and nothing runs after
// it, whichever allocation fails. (It makes none today: the sweep makes
// sure that stays harmless.)
TEST_F(TimerServiceAllocTest, StopNeverFailsAndDiscardsEverything) {
  WithinDeadline("the sweep", [&] {
    Sweep("Stop", [&](long n) {
      const std::vector<TimerId> ids =
          MakeWithAFullQueue([](int i) { return i % 60; });
      service_->Every(milliseconds(7), Label(62));
      bool injected;
      EXPECT_FALSE(Throws(n, injected, [&] { service_->Stop(); }));
      EXPECT_EQ(service_->size(), 0u);
      EXPECT_FALSE(service_->Cancel(ids[0]));
      EXPECT_FALSE(service_->After(Duration::zero(), Label(63)).valid());
      clock_.Advance(milliseconds(600));
      for (int label = 0; label < RunCounts::kLabels; ++label) {
        EXPECT_EQ(runs_.runs(label), 0) << "label " << label << " ran";
      }
      service_.reset();
      return injected;
    });
  });
}

// The timer thread and the worker run out of memory k times: every
// one-shot still runs exactly once and never early, the failures are
// reported, and the repeat is not lost: it keeps its phase and then runs
// once per period. (Before, an exception on the timer thread ended the
// process.) The repeat is not expected to run for every period the clock
// went through: the clock moves without waiting for the worker, and a
// fixed-rate repeat skips the periods that passed while it was behind
// (TimerService's class comment), as it does when the machine stalls.
// 20 one-shots are due at each of 1..20 ms, so that the timer thread must
// allocate as they fire: its list of fired timers has room for 16 at first,
// and the workers' queue takes a new block every 32 timers (with one timer
// per millisecond, whether anything allocated before the loop gave up
// depended on how fast the worker ran: no failure, 1 run in 30).
TEST_F(TimerServiceAllocTest, TimerThreadAndWorkersOutOfMemoryLoseNothing) {
  WithinDeadline("the sweep", [&] {
    for (long k = 1; k <= 12; ++k) {
      SCOPED_TRACE(std::to_string(k) + " failures on the library's threads");
      Make();
      runs_.Reset();
      const TimePoint t0 = clock_.Now();
      for (int i = 1; i <= 20; ++i) {
        for (int j = 0; j < 20; ++j) {
          service_->After(milliseconds(i), [this, i] { runs_.Ran(i); });
        }
      }
      service_->Every(milliseconds(3), [this] { runs_.Ran(0); });
      {
        FailOthers fail(k);
        for (int t = 0; t < 40 && fail.failed() < k; ++t) {
          clock_.Advance(milliseconds(1));
        }
        EXPECT_EQ(fail.failed(), k);
      }
      Advance(milliseconds(30));
      for (int i = 1; i <= 20; ++i) {
        EXPECT_EQ(runs_.runs(i), 20) << "the timers due at " << i << " ms";
        EXPECT_GE(runs_.first_at(i), t0 + milliseconds(i))
            << "the timers due at " << i << " ms";
      }
      EXPECT_GE(errors_.load(), 1);
      EXPECT_EQ(service_->size(), 1u);  // the repeat alone
      // The repeat ran, and now runs once in each period, on its phase
      // (start + 3 ms * n): with the clock stepped from one phase point to
      // the next, it runs at each.
      EXPECT_GE(runs_.runs(0), 1);
      Advance((milliseconds(3) - (clock_.Now() - t0) % milliseconds(3)) %
              milliseconds(3));
      const int runs = runs_.runs(0);
      for (int p = 1; p <= 4; ++p) {
        Advance(milliseconds(3));
        EXPECT_EQ(runs_.runs(0), runs + p) << "period " << p;
        EXPECT_EQ(runs_.at(0), clock_.Now());
        EXPECT_EQ((runs_.at(0) - t0) % milliseconds(3), Duration::zero())
            << "ran at " << (runs_.at(0) - t0).count() << " ns";
      }
      service_.reset();
      errors_ = 0;
    }
  });
}

// The timer thread's first allocation fails (re-filing a timer from a
// level-1 slot into level 0, whose slot has no room yet): reported,
// retried, and the timer runs, on time. (Before: std::terminate.) A timer
// due within the wheel's first two revolutions (128 ticks) is filed at
// level 0 at once and firing it allocates nothing on the timer thread (the
// fired list has room), so this one is due at 200 ms.
TEST_F(TimerServiceAllocTest, TimerThreadOutOfMemoryRetries) {
  Make();
  service_->After(milliseconds(200), [this] { runs_.Ran(1); });
  {
    FailOthers fail(1);
    clock_.Advance(milliseconds(199));
    EXPECT_EQ(fail.failed(), 1);
  }
  EXPECT_EQ(errors_.load(), 1);
  EXPECT_EQ(service_->size(), 1u);
  Advance(milliseconds(1));  // the retry, one millisecond later: due then
  EXPECT_EQ(runs_.runs(1), 1);
  EXPECT_EQ(runs_.at(1), Since(milliseconds(200)));
  EXPECT_EQ(errors_.load(), 1);
}

// A repeat's re-arm runs out of memory after its run: reported, re-armed by
// the timer thread, and it keeps its phase. (Before: the re-arm ran in a
// destructor and std::terminate ended the process.)
TEST_F(TimerServiceAllocTest, RepeatWhoseRearmRunsOutOfMemoryGoesOn) {
  Make();
  std::atomic<int> run{0};
  service_->Every(milliseconds(10), [&] {
    runs_.Ran(++run);
    // The worker's next allocation fails: the re-arm's, after this run.
    if (run == 1) testing::alloc::This().fail_at = 0;
  });
  Advance(milliseconds(10));
  EXPECT_EQ(run.load(), 1);
  EXPECT_EQ(errors_.load(), 1);
  EXPECT_EQ(service_->size(), 1u);
  Advance(milliseconds(10));
  Advance(milliseconds(10));
  EXPECT_EQ(run.load(), 3);
  EXPECT_EQ(runs_.at(3), start_ + milliseconds(30));
}

// The same when the run itself threw (the other case: before, the
// re-arm ran in a destructor during the unwinding, and its bad_alloc was
// std::terminate): both are reported, the callback's throw is counted as
// its error (the bad_alloc, the library's, is not), and the repeat goes on
// on its phase.
TEST_F(TimerServiceAllocTest, RepeatThatThrowsAndWhoseRearmRunsOutOfMemoryGoesOn) {
  Make();
  std::atomic<int> run{0};
  service_->Every(milliseconds(10), [&] {
    runs_.Ran(++run);
    if (run == 1) {
      // The worker's next allocation fails: the re-arm's, after this run.
      // (An int is thrown: a std::runtime_error's message would allocate.)
      testing::alloc::This().fail_at = 0;
      throw 1;
    }
  });
  Advance(milliseconds(10));
  EXPECT_EQ(run.load(), 1);
  EXPECT_EQ(errors_.load(), 2);  // the throw and the re-arm's bad_alloc
  EXPECT_EQ(service_->callback_errors(), 1u);
  EXPECT_EQ(service_->size(), 1u);
  Advance(milliseconds(10));
  Advance(milliseconds(10));
  EXPECT_EQ(run.load(), 3);
  EXPECT_EQ(runs_.at(3), start_ + milliseconds(30));
  EXPECT_EQ(service_->callback_errors(), 1u);
}

// The state machine under TimerService, driven directly so that the timer
// thread's retry comes exactly when the test says. A repeat (every 10 ms)
// whose re-arm ran out of memory after its run at 10 ms is re-armed by the
// shard's next Advance and makes its run at 20 ms: on time if that Advance
// comes at or before 20 ms, else once, late (as after a stall), and then
// keeps its phase (next at 30 ms). Before, the retry skipped a run due at
// or before the retry's time: retried at 20 ms or later it was armed for
// 30 ms, and running out of memory had cost the repeat a run. (Through the
// service, RepeatWhoseRearmRunsOutOfMemoryGoesOn saw this when the timer
// thread's retry came after the clock's next move: 1 run in 6.)
TEST(TimerShardAllocTest, RepeatRearmedAfterOutOfMemoryLosesNoRun) {
  using internal::TimerShard;
  const TimePoint t0{std::chrono::hours(1)};
  auto advance = [](TimerShard& shard, TimePoint now) {
    std::vector<TimerShard::Fired> fired;
    shard.Advance(now, fired);
    return fired;
  };
  // One case; its ASSERTs end the case, not the test.
  auto retried_at = [&](int retry_ms) {
    SCOPED_TRACE("retried at " + std::to_string(retry_ms) + " ms");
    TimerShard shard(milliseconds(1), t0, 0, 1);
    TimerShard::Callback fn = [] {};
    const TimerId id = shard.Add(t0 + milliseconds(10), milliseconds(10), fn);
    ASSERT_EQ(advance(shard, t0 + milliseconds(10)).size(), 1u);
    TimerShard::Callback running;
    ASSERT_EQ(shard.TakeToRun(id, running), TimerShard::Start::kRepeat);
    TimerShard::Finished finished;
    {
      FailNth fail(0);  // filing the next run (its slot has no room yet)
      finished = shard.FinishRun(id, running, t0 + milliseconds(10));
      EXPECT_TRUE(fail.failed());
    }
    ASSERT_TRUE(finished.out_of_memory);
    EXPECT_EQ(shard.live(), 1u);

    const TimePoint retry = t0 + milliseconds(retry_ms);
    std::vector<TimerShard::Fired> fired = advance(shard, retry);
    if (retry < t0 + milliseconds(20)) {
      EXPECT_TRUE(fired.empty());
      fired = advance(shard, t0 + milliseconds(20));
    }
    ASSERT_EQ(fired.size(), 1u) << "the run at 20 ms was lost";
    EXPECT_EQ(fired[0].id, id);
    EXPECT_EQ(fired[0].due, t0 + milliseconds(20));
    ASSERT_EQ(shard.TakeToRun(id, running), TimerShard::Start::kRepeat);
    const TimePoint ended = std::max(retry, t0 + milliseconds(20));
    finished = shard.FinishRun(id, running, ended);
    EXPECT_FALSE(finished.out_of_memory);
    EXPECT_EQ(finished.armed_at, std::optional<TimePoint>(t0 + milliseconds(30)));
  };
  for (const int retry_ms : {15, 20, 25}) retried_at(retry_ms);
}

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

// ---------------------------------------------------------------------------
// Cache.

class CacheAllocTest : public ::testing::Test {
 protected:
  using TrackedCache = Cache<int, Tracked>;
  // Keys 0..7 (the limit), one shard, no jitter; key 0 expires at 1 ms but
  // the wheel is too coarse for its timer to have run.
  void Make() {
    cache_ = std::make_unique<TrackedCache>(
        seconds(10), CacheOptions{.limit = 8, .jitter = 0.0,
                                  .resolution = std::chrono::hours(1),
                                  .shards = 1, .clock = &clock_});
    raw_ = cache_.get();
    for (int k = 0; k < 8; ++k) {
      cache_->Set(k, Tracked(100 + k, &call_back_),
                  k == 0 ? milliseconds(1) : seconds(10));
    }
    clock_.Advance(milliseconds(2));
  }
  // Key -> value of every live entry, read without changing recency.
  std::map<int, int> Contents() {
    std::map<int, int> contents;
    for (int k = 0; k < 40; ++k) {
      if (std::optional<Tracked> v = cache_->Get(k)) contents[k] = v->value;
    }
    return contents;
  }

  ManualClock clock_;
  TrackedCache* raw_ = nullptr;
  std::function<void()> call_back_ = [this] { raw_->size(); };
  std::unique_ptr<TrackedCache> cache_;
};

TEST_F(CacheAllocTest, EveryCallHappensOrChangesNothing) {
  WithinDeadline("the sweep", [&] {
    EXPECT_GT(Sweep("Set of a new key (evicting one)", [&](long n) {
      Make();
      bool injected;
      const bool threw = Throws(n, injected, [&] {
        cache_->Set(20, Tracked(200, &call_back_));
      });
      std::map<int, int> want = {{1, 101}, {2, 102}, {3, 103}, {4, 104},
                                 {5, 105}, {6, 106}, {7, 107}};
      if (!threw) want[20] = 200;  // evicted: 0 (expired anyway)
      EXPECT_EQ(Contents(), want);
      cache_.reset();
      return injected;
    }), 0);
    Sweep("Set of a key that exists, Get of an expired one, Del", [&](long n) {
      Make();
      bool injected;
      std::optional<Tracked> got;
      bool deleted = false;
      const bool threw = Throws(n, injected, [&] {
        cache_->Set(3, Tracked(300, &call_back_));
        got = cache_->Get(0);
        deleted = cache_->Del(5);
      });
      EXPECT_FALSE(threw);
      EXPECT_FALSE(got.has_value());
      EXPECT_TRUE(deleted);
      EXPECT_EQ(Contents(), (std::map<int, int>{{1, 101}, {2, 102}, {3, 300},
                                                {4, 104}, {6, 106}, {7, 107}}));
      cache_.reset();
      return injected;
    });
    EXPECT_GT(Sweep("Take of a missing key", [&](long n) {
      Make();
      bool injected;
      const bool threw = Throws(n, injected, [&] {
        cache_->Take(30, [&] { return Tracked(130, &call_back_); });
      });
      EXPECT_EQ(Contents().count(30), threw ? 0u : 1u);
      // A Take that failed left no fetch behind for others to wait on.
      EXPECT_EQ(cache_->Take(31, [&] { return Tracked(131); }).value, 131);
      cache_.reset();
      return injected;
    }), 0);
  });
  EXPECT_EQ(live_values.load(), 0);
}

// The cache's timer thread runs out of memory freeing expired entries:
// retried, and every entry is freed in the end (never returned expired).
TEST_F(CacheAllocTest, TimerThreadOutOfMemoryFreesEveryEntryInTheEnd) {
  WithinDeadline("the sweep", [&] {
    for (long k = 1; k <= 6; ++k) {
      SCOPED_TRACE(std::to_string(k) + " failures on the timer thread");
      cache_ = std::make_unique<TrackedCache>(
          milliseconds(10), CacheOptions{.jitter = 0.0,
                                         .resolution = milliseconds(1),
                                         .shards = 2, .clock = &clock_});
      raw_ = cache_.get();
      for (int key = 0; key < 40; ++key) cache_->Set(key, Tracked(key, &call_back_));
      {
        FailOthers fail(k);
        for (int t = 0; t < 30 && fail.failed() < k; ++t) {
          clock_.Advance(milliseconds(1));
        }
      }
      clock_.Advance(milliseconds(20));
      EXPECT_EQ(cache_->size(), 0u);
      EXPECT_EQ(cache_->stats().expirations, 40u);
      cache_.reset();
    }
  });
  EXPECT_EQ(live_values.load(), 0);
}

// The report thread runs out of memory inside `report` (which allocates,
// as building a log line does; the report thread itself allocates
// nothing): what `report` threw is counted (Cache::callback_errors())
// and handed to on_error, the thread goes on, and every later interval is
// reported. (Before: std::terminate.)
TEST_F(CacheAllocTest, ReportThreadOutOfMemoryIsCountedAndReportingGoesOn) {
  WithinDeadline("the sweep", [&] {
    for (long k = 1; k <= 3; ++k) {
      SCOPED_TRACE(std::to_string(k) + " failures on the report thread");
      std::atomic<long> calls{0};
      std::atomic<long> completed{0};
      std::atomic<long> bad_allocs{0};
      cache_ = std::make_unique<TrackedCache>(
          std::chrono::hours(24),
          CacheOptions{.jitter = 0.0,
                       .resolution = std::chrono::hours(1),
                       .shards = 1,
                       .clock = &clock_,
                       .report_interval = minutes(1),
                       .report =
                           [&](const CacheStats& stats) {
                             ++calls;
                             std::string line(64, ' ');  // one allocation
                             line[0] = static_cast<char>('0' + stats.size % 10);
                             ++completed;
                           },
                       .on_error =
                           [&](std::exception_ptr e) {
                             try {
                               std::rethrow_exception(e);
                             } catch (const std::bad_alloc&) {
                               ++bad_allocs;
                             } catch (...) {
                             }
                           }});
      raw_ = cache_.get();
      cache_->Set(1, Tracked(1, &call_back_));
      clock_.Advance(minutes(1));  // a first report, and the timer thread's
                                   // first pass: its lists have room now
      EXPECT_EQ(completed.load(), 1);
      {
        FailOthers fail(k);
        for (int t = 0; t < 10 && fail.failed() < k; ++t) {
          clock_.Advance(minutes(1));
        }
        EXPECT_EQ(fail.failed(), k);
      }
      const long before = calls.load();
      clock_.Advance(minutes(1));
      clock_.Advance(minutes(1));
      EXPECT_EQ(calls.load(), before + 2);  // reporting goes on
      EXPECT_EQ(completed.load(), calls.load() - k);
      EXPECT_EQ(bad_allocs.load(), k);
      EXPECT_EQ(cache_->callback_errors(), static_cast<std::uint64_t>(k));
      EXPECT_THAT(cache_->Get(1), ::testing::Optional(::testing::Field(
                                      &Tracked::value, 1)));
      cache_.reset();
    }
  });
  EXPECT_EQ(live_values.load(), 0);
}

// ---------------------------------------------------------------------------
// Executors.

// Which tasks ran, in order, without allocating.
class TaskLog {
 public:
  static constexpr int kTasks = 256;
  void Ran(int task) {
    order_[next_++] = task;
    ++runs_[task];
  }
  // Tasks 0..n-1 each ran exactly once, in order.
  void ExpectRanOnceInOrder(int n) const {
    EXPECT_EQ(next_.load(), n);
    for (int i = 0; i < n && i < next_.load(); ++i) {
      EXPECT_EQ(order_[i].load(), i) << "position " << i;
      EXPECT_EQ(runs_[i].load(), 1) << "task " << i;
    }
  }
  // How many runs there were.
  int ran() const { return next_.load(); }
  std::function<void(std::vector<int>)> Execute() {
    return [this](std::vector<int> batch) {
      for (int t : batch) Ran(t);
    };
  }

 private:
  std::array<std::atomic<int>, kTasks> order_{};
  std::array<std::atomic<int>, kTasks> runs_{};
  std::atomic<int> next_{0};
};

// A PeriodicalExecutor container of the user's own (TaskContainer): tasks
// in a std::list, a node per task (AddTask allocates each time; an empty
// list allocates nothing, so RemoveAll cannot throw), full at 4 tasks.
class ListContainer {
 public:
  using Task = int;
  using Batch = std::list<int>;
  explicit ListContainer(TaskLog& log) : log_(log) {}
  bool AddTask(int&& task) {
    tasks_.push_back(task);
    return tasks_.size() >= 4;
  }
  Batch RemoveAll() noexcept {
    Batch batch;
    batch.swap(tasks_);
    return batch;
  }
  void Execute(Batch batch) const {
    for (int t : batch) log_.Ran(t);
  }

 private:
  TaskLog& log_;
  std::list<int> tasks_;
};

// Sweeps an executor's Add, Flush, Wait and destructor over their
// allocations, and an Add that restarts the flusher thread after it ended
// (the ended thread is handed back to be joined: before, a failure to start
// the new one destroyed the ended one while joinable, std::terminate).
// `make(log, clock)` makes an executor (in a std::unique_ptr) whose batches
// log their tasks and whose 4th buffered task fills a batch; `add(executor,
// task)` adds one. Every task whose Add returned is executed exactly once,
// in order, and Wait returns, whichever allocation fails.
template <typename Make, typename Add>
void SweepExecutorCalls(ManualClock& clock, Make make, Add add) {
  const char* names[] = {"Add", "Flush", "Wait", "the destructor",
                         "Add restarting the flusher thread"};
  for (int call = 0; call < 5; ++call) {
    EXPECT_GT(Sweep(names[call], [&](long n) {
      TaskLog log;
      auto executor = make(log, clock);
      int added = 0;
      for (; added < 6; ++added) add(*executor, added);
      executor->Wait();
      // 11 idle intervals: the flusher thread has ended, so the next Add
      // starts a new one (and hands over the ended one to be joined).
      for (int i = 0; i < 11; ++i) clock.Advance(milliseconds(10));
      EXPECT_FALSE(executor->flusher_running());
      bool injected;
      bool threw;
      // An Add that threw stored its task if only the thread's start failed
      // (it runs with the next flush); not if storing it failed.
      bool maybe_stored = false;
      if (call == 4) {
        threw = Throws(n, injected, [&] { add(*executor, added); });
        if (threw) {
          maybe_stored = true;
        } else {
          ++added;
        }
      } else {
        add(*executor, added++);
        add(*executor, added++);
        add(*executor, added++);
        threw = Throws(n, injected, [&] {
          switch (call) {
            case 0:
              add(*executor, added);  // the 4th of a batch: handed over
              break;
            case 1:
              executor->Flush();
              break;
            case 2:
              executor->Wait();
              break;
            default:
              executor.reset();
          }
        });
        if (call == 0 && !threw) ++added;
      }
      if (executor) {
        executor->Wait();
        executor.reset();
      }
      if (maybe_stored && log.ran() == added + 1) ++added;
      log.ExpectRanOnceInOrder(added);
      return injected;
    }), 0);
  }
}

// (Before: a Flush that failed after taking its batch lost the tasks, and
// one that failed after numbering it made every Wait hang.)
TEST(ExecutorAllocTest, BulkExecutorLosesNoTaskAndWaitReturns) {
  ManualClock clock;
  WithinDeadline("the sweep", [&] {
    SweepExecutorCalls(
        clock,
        [](TaskLog& log, ManualClock& c) {
          return std::make_unique<BulkExecutor<int>>(
              log.Execute(), BulkExecutorOptions{.max_tasks = 4,
                                                 .interval = milliseconds(10),
                                                 .clock = &c});
        },
        [](BulkExecutor<int>& e, int task) { e.Add(task); });
  });
}

TEST(ExecutorAllocTest, ChunkExecutorLosesNoTaskAndWaitReturns) {
  ManualClock clock;
  WithinDeadline("the sweep", [&] {
    SweepExecutorCalls(
        clock,
        [](TaskLog& log, ManualClock& c) {
          return std::make_unique<ChunkExecutor<int>>(
              log.Execute(), ChunkExecutorOptions{.max_bytes = 10,
                                                  .interval = milliseconds(10),
                                                  .clock = &c});
        },
        // 3 bytes each: the 4th task makes 12 of 10, a full batch.
        [](ChunkExecutor<int>& e, int task) { e.Add(task, 3); });
  });
}

// A container of the user's own, whose AddTask allocates too.
TEST(ExecutorAllocTest, PeriodicalExecutorWithItsOwnContainerLosesNoTask) {
  ManualClock clock;
  WithinDeadline("the sweep", [&] {
    SweepExecutorCalls(
        clock,
        [](TaskLog& log, ManualClock& c) {
          return std::make_unique<PeriodicalExecutor<ListContainer>>(
              milliseconds(10), ListContainer(log),
              PeriodicalExecutorOptions{.clock = &c});
        },
        [](PeriodicalExecutor<ListContainer>& e, int task) { e.Add(task); });
  });
}

// The flusher thread runs out of memory (taking a batch): reported, and
// the tasks run at a later tick. (Before: the exception ended the process.)
TEST(ExecutorAllocTest, FlusherThreadOutOfMemoryLosesNoTask) {
  ManualClock clock;
  WithinDeadline("the sweep", [&] {
    for (long k = 1; k <= 4; ++k) {
      TaskLog log;
      std::atomic<int> errors{0};
      {
        BulkExecutor<int> executor(
            log.Execute(),
            {.max_tasks = 100, .interval = milliseconds(10), .clock = &clock,
             .on_error = [&](std::exception_ptr) { ++errors; }});
        for (int i = 0; i < 10; ++i) executor.Add(i);
        {
          FailOthers fail(k);
          for (int t = 0; t < 10 && fail.failed() < k; ++t) {
            clock.Advance(milliseconds(10));
          }
          EXPECT_EQ(fail.failed(), k);
        }
        clock.Advance(milliseconds(10));
        executor.Wait();
        EXPECT_GE(errors.load(), 1);
      }
      log.ExpectRanOnceInOrder(10);
    }
  });
}

TEST(ExecutorAllocTest, ChunkAndDelayExecutorsLoseNothing) {
  ManualClock clock;
  WithinDeadline("the sweep", [&] {
    EXPECT_GT(Sweep("ChunkExecutor::Add", [&](long n) {
      TaskLog log;
      int added = 0;
      {
        ChunkExecutor<int> executor(log.Execute(), {.max_bytes = 10,
                                                    .interval = milliseconds(10),
                                                    .clock = &clock});
        for (; added < 3; ++added) executor.Add(added, 3);
        bool injected_here;
        const bool threw = Throws(n, injected_here, [&] { executor.Add(added, 3); });
        if (!threw) ++added;
        executor.Wait();
        log.ExpectRanOnceInOrder(added);
        if (!injected_here) return false;
      }
      return true;
    }), 0);
    EXPECT_GT(Sweep("DelayExecutor::Trigger", [&](long n) {
      std::atomic<int> runs{0};
      bool injected;
      bool threw;
      {
        DelayExecutor executor([&] { ++runs; }, milliseconds(10),
                               {.clock = &clock});
        threw = Throws(n, injected, [&] { executor.Trigger(); });
        clock.Advance(milliseconds(10));
        EXPECT_EQ(runs.load(), threw ? 0 : 1);
        executor.Trigger();  // works again
      }
      EXPECT_EQ(runs.load(), threw ? 1 : 2);  // the destructor ran the last
      return injected;
    }), 0);
    // Its thread ended after the first run; the Trigger under failure
    // starts a new one, and hands the ended one back to be joined (before:
    // a failure there destroyed it joinable, std::terminate).
    EXPECT_GT(Sweep("DelayExecutor::Trigger restarting its ended thread",
                    [&](long n) {
      std::atomic<int> runs{0};
      bool injected;
      bool threw;
      {
        DelayExecutor executor([&] { ++runs; }, milliseconds(10),
                               {.clock = &clock});
        executor.Trigger();
        clock.Advance(milliseconds(10));
        EXPECT_EQ(runs.load(), 1);
        threw = Throws(n, injected, [&] { executor.Trigger(); });
        clock.Advance(milliseconds(10));
        EXPECT_EQ(runs.load(), threw ? 1 : 2);
        executor.Trigger();  // works again
      }
      EXPECT_EQ(runs.load(), threw ? 2 : 3);
      return injected;
    }), 0);
  });
}

TEST(ConstructorAllocTest, ConstructorsThrowAndLeaveNothingRunning) {
  ManualClock clock;
  WithinDeadline("the sweep", [&] {
    EXPECT_GT(Sweep("TimerService", [&](long n) {
      bool injected;
      Throws(n, injected, [&] {
        TimerService s(TimerServiceOptions{.workers = 4, .clock = &clock});
      });
      return injected;
    }), 0);
    EXPECT_GT(Sweep("TimingWheel", [&](long n) {
      bool injected;
      Throws(n, injected, [&] {
        TimingWheel<int, int> w(milliseconds(1), [](const int&, const int&) {},
                                TimingWheelOptions{.workers = 4, .clock = &clock});
      });
      return injected;
    }), 0);
    EXPECT_GT(Sweep("Cache", [&](long n) {
      bool injected;
      Throws(n, injected, [&] {
        Cache<int, int> c(seconds(1), {.clock = &clock,
                                       .report_interval = seconds(1),
                                       .report = [](const CacheStats&) {}});
      });
      return injected;
    }), 0);
    EXPECT_GT(Sweep("BulkExecutor", [&](long n) {
      bool injected;
      Throws(n, injected, [&] {
        BulkExecutor<int> b([](std::vector<int>) {}, {.clock = &clock});
        b.Add(1);  // starts the flusher thread
      });
      return injected;
    }), 0);
    // The other executors, each with the call that starts its thread; the
    // task or trigger that a successful construction took is run by the
    // destructor (checked by the sweeps above), so only "nothing left
    // running, nothing leaked" is checked here (and by ASan).
    EXPECT_GT(Sweep("ChunkExecutor", [&](long n) {
      bool injected;
      Throws(n, injected, [&] {
        ChunkExecutor<int> c([](std::vector<int>) {}, {.clock = &clock});
        c.Add(1, 1);
      });
      return injected;
    }), 0);
    EXPECT_GT(Sweep("PeriodicalExecutor with its own container", [&](long n) {
      TaskLog log;
      bool injected;
      const bool threw = Throws(n, injected, [&] {
        PeriodicalExecutor<ListContainer> p(
            milliseconds(10), ListContainer(log), {.clock = &clock});
        p.Add(0);
      });
      // The task ran (the destructor ran it) unless the construction or
      // its AddTask failed; the flusher thread's start failing leaves it
      // stored, and the destructor runs it too.
      if (!threw) log.ExpectRanOnceInOrder(1);
      return injected;
    }), 0);
    EXPECT_GT(Sweep("DelayExecutor", [&](long n) {
      std::atomic<int> runs{0};
      bool injected;
      const bool threw = Throws(n, injected, [&] {
        DelayExecutor d([&] { ++runs; }, milliseconds(10), {.clock = &clock});
        d.Trigger();
      });
      EXPECT_EQ(runs.load(), threw ? 0 : 1);  // the destructor runs it
      return injected;
    }), 0);
  });
}

}  // namespace
}  // namespace tickwheel
