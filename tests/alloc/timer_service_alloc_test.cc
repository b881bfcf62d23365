// SPDX-License-Identifier: Apache-2.0
// TimerService and its shards swept over their allocations, also on the
// library's own threads (alloc_sweep.h says what every sweep checks).
#include "alloc/alloc_sweep.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "runtime_test_util.h"
#include "tickwheel/clock.h"
#include "tickwheel/internal/timer_shard.h"
#include "tickwheel/timer_service.h"
#include "watchdog.h"

namespace tickwheel {
namespace {

using std::chrono::milliseconds;
using testing::Gate;
using testing::WithinDeadline;
using testing::alloc::FailNth;
using testing::alloc::FailOthers;

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

}  // namespace
}  // namespace tickwheel
