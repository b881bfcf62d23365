// SPDX-License-Identifier: Apache-2.0
// TimerService on manual time, plus tao's defects (a cancel that loses to
// the add before it, repeats that burst or lose phase) turned into tests.
#include "tickwheel/timer_service.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
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

constexpr Duration kTick = milliseconds(10);

class TimerServiceTest : public ::testing::Test {
 protected:
  void Make(std::size_t workers = 1,
            std::function<void(std::exception_ptr)> on_error = nullptr) {
    service_ = std::make_unique<TimerService>(
        TimerServiceOptions{.tick = kTick,
                            .workers = workers,
                            .clock = &clock_,
                            .on_error = std::move(on_error)});
  }

  // A callback that logs `name`.
  TimerService::Callback Log(std::string name) {
    return [this, name = std::move(name)] { log_.Record(name); };
  }

  // With one worker: waits until everything queued so far has run.
  void Settle() {
    Gate done;
    ASSERT_TRUE(service_->After(Duration::zero(), [&] { done.Open(); }).valid());
    ASSERT_TRUE(done.Wait()) << "settle callback never ran";
  }

  void Advance(Duration d) {
    clock_.Advance(d);
    Settle();
  }

  // (name, ms since start) of every run so far.
  std::vector<std::pair<std::string, long>> Runs() {
    std::vector<std::pair<std::string, long>> runs;
    for (const auto& e : log_.events()) {
      runs.emplace_back(
          e.event,
          std::chrono::duration_cast<milliseconds>(e.at - start_).count());
    }
    return runs;
  }

  ManualClock clock_;
  const TimePoint start_ = clock_.Now();
  EventLog<std::string> log_{clock_};
  Gate release_;  // for callbacks that block; outlives the service
  std::unique_ptr<TimerService> service_;  // destroyed first
};

using Ran = std::pair<std::string, long>;

TEST_F(TimerServiceTest, RejectsBadArguments) {
  EXPECT_THROW(TimerService(TimerServiceOptions{.tick = nanoseconds(0)}),
               std::invalid_argument);
  EXPECT_THROW(TimerService(TimerServiceOptions{.workers = 0}),
               std::invalid_argument);
  Make();
  EXPECT_THROW(service_->After(seconds(1), nullptr), std::invalid_argument);
  EXPECT_THROW(service_->At(start_, nullptr), std::invalid_argument);
  EXPECT_THROW(service_->Every(seconds(1), nullptr), std::invalid_argument);
  try {
    service_->Every(-seconds(1), [] {});
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("period must be positive"));
  }
  EXPECT_EQ(service_->size(), 0u);
}

TEST_F(TimerServiceTest, AfterRunsOnceAtItsTimeAndNeverBefore) {
  Make();
  service_->After(milliseconds(100), Log("a"));
  EXPECT_EQ(service_->size(), 1u);
  Advance(milliseconds(99));
  EXPECT_THAT(Runs(), IsEmpty());
  Advance(milliseconds(1));
  Advance(seconds(5));
  EXPECT_THAT(Runs(), ElementsAre(Ran{"a", 100}));
  EXPECT_EQ(service_->size(), 0u);
}

TEST_F(TimerServiceTest, PastTimesAndNonPositiveDelaysRunAtOnce) {
  Make();
  service_->At(start_ - seconds(10), Log("past"));
  service_->After(-seconds(1), Log("negative"));
  service_->After(Duration::zero(), Log("zero"));
  Settle();
  EXPECT_THAT(Runs(), ElementsAre(Ran{"past", 0}, Ran{"negative", 0},
                                  Ran{"zero", 0}));
}

// timing_wheel_fuzz found now + Duration::max() overflowing; TimerService
// had the same in now + delay and in the repeat arithmetic (undefined
// behaviour; in practice a time in the past, so the timer ran at once).
TEST_F(TimerServiceTest, LongestDelaysAndPeriodsNeverRun) {
  Make();
  ASSERT_TRUE(service_->After(Duration::max(), Log("after")).valid());
  ASSERT_TRUE(service_->Every(Duration::max(), Log("every")).valid());
  const TimerId moved = service_->After(kTick, Log("moved"));
  ASSERT_TRUE(service_->Reschedule(moved, Duration::max()));
  Advance(10 * kTick);
  Advance(std::chrono::hours(24 * 365));
  EXPECT_THAT(Runs(), IsEmpty());
  EXPECT_EQ(service_->size(), 3u);
}

TEST_F(TimerServiceTest, RepeatWhoseNextRunCannotBeRepresentedRunsOnce) {
  Make();
  const Duration period = Duration::max() / 2 + Duration(1);  // 146 years
  ASSERT_TRUE(service_->Every(period, Log("every")).valid());
  Advance(period);
  Advance(period / 2);  // the next run would be after the end of time
  EXPECT_EQ(Runs().size(), 1u);
  EXPECT_EQ(service_->size(), 1u);
}

TEST_F(TimerServiceTest, CancelledTimerNeverRuns) {
  Make();
  TimerId id = service_->After(milliseconds(50), Log("cancelled"));
  service_->After(milliseconds(50), Log("kept"));
  EXPECT_TRUE(service_->Cancel(id));
  EXPECT_FALSE(service_->Cancel(id));
  EXPECT_EQ(service_->size(), 1u);
  Advance(milliseconds(50));
  Advance(seconds(1));
  EXPECT_THAT(Runs(), ElementsAre(Ran{"kept", 50}));
  EXPECT_FALSE(service_->Cancel(TimerId()));
}

TEST_F(TimerServiceTest, CancelAfterTheRunReturnsFalse) {
  Make();
  TimerId id = service_->After(milliseconds(10), Log("a"));
  Advance(milliseconds(10));
  EXPECT_FALSE(service_->Cancel(id));
  EXPECT_FALSE(service_->Reschedule(id, seconds(1)));
}

TEST_F(TimerServiceTest, CancelOfAFiredTimerStillWaitingForAWorkerWins) {
  Make();
  service_->After(milliseconds(10), [this] {
    log_.Record("blocker");
    release_.Wait();
  });
  TimerId queued = service_->After(milliseconds(10), Log("queued"));
  clock_.Advance(milliseconds(10));
  ASSERT_TRUE(log_.WaitForCount(1));  // the blocker holds the only worker
  EXPECT_TRUE(service_->Cancel(queued));
  release_.Open();
  Settle();
  EXPECT_THAT(Runs(), ElementsAre(Ran{"blocker", 10}));
}

// tao handed out the id before inserting the timer, so a cancel right after
// the add could miss it. Here the add is done when After returns.
TEST(TimerServiceRaceTest, CancelRightAfterAfterAlwaysWins) {
  std::atomic<int> runs{0};
  TimerService service;
  std::vector<std::thread> threads;
  std::atomic<int> lost{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        TimerId id = service.After(seconds(30), [&] { ++runs; });
        if (!service.Cancel(id)) ++lost;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(lost.load(), 0);
  EXPECT_EQ(service.size(), 0u);
  service.Stop();
  EXPECT_EQ(runs.load(), 0);
}

TEST_F(TimerServiceTest, RescheduleMovesAOneShotLaterOrEarlier) {
  Make();
  TimerId later = service_->After(milliseconds(100), Log("later"));
  TimerId earlier = service_->After(seconds(10), Log("earlier"));
  EXPECT_TRUE(service_->Reschedule(later, milliseconds(500)));
  EXPECT_TRUE(service_->Reschedule(earlier, milliseconds(200)));
  Advance(milliseconds(100));
  EXPECT_THAT(Runs(), IsEmpty());
  Advance(milliseconds(100));
  Advance(milliseconds(300));
  Advance(seconds(20));
  EXPECT_THAT(Runs(), ElementsAre(Ran{"earlier", 200}, Ran{"later", 500}));
}

TEST_F(TimerServiceTest, RescheduleInSmallStepsFiresAtTheLastTime) {
  Make();
  TimerId id = service_->After(milliseconds(100), Log("a"));
  for (int i = 1; i <= 5; ++i) {
    Advance(milliseconds(50));
    ASSERT_TRUE(service_->Reschedule(id, milliseconds(100)));
  }
  Advance(milliseconds(90));
  EXPECT_THAT(Runs(), IsEmpty());
  Advance(milliseconds(10));
  EXPECT_THAT(Runs(), ElementsAre(Ran{"a", 350}));
}

TEST_F(TimerServiceTest, EveryRunsAtFixedRateWithoutDrift) {
  Make();
  service_->Every(milliseconds(100), Log("tick"));
  for (int i = 0; i < 10; ++i) Advance(milliseconds(100));
  std::vector<Ran> expected;
  for (int i = 1; i <= 10; ++i) expected.push_back({"tick", i * 100});
  EXPECT_EQ(Runs(), expected);
  EXPECT_EQ(service_->size(), 1u);
}

TEST_F(TimerServiceTest, EverySkipsMissedPeriodsKeepingItsPhase) {
  Make();
  service_->Every(milliseconds(100), Log("tick"));
  // A stall: 350 ms pass at once. The 100 ms run happens late, the 200 and
  // 300 ms runs are skipped (no burst), and the phase is kept: next at 400.
  Advance(milliseconds(350));
  Advance(milliseconds(40));
  Advance(milliseconds(10));
  EXPECT_THAT(Runs(), ElementsAre(Ran{"tick", 350}, Ran{"tick", 400}));
}

// A run that overruns five periods: no period starts while it runs, and the
// next run comes on the phase after it ends. The overrunning run ends off
// the phase (at 650 ms) and by throwing: the worker reports the exception
// only after the repeat was re-armed (the re-arm runs however the callback
// ends), so the clock stays at 650 ms until the re-arm has read it, and the
// next run is due at exactly 700 ms.
TEST_F(TimerServiceTest, EveryNeverOverlapsItself) {
  Gate rearmed;
  Make(/*workers=*/4, [&](std::exception_ptr) { rearmed.Open(); });
  std::atomic<int> running{0};
  std::atomic<int> max_running{0};
  std::atomic<int> runs{0};
  service_->Every(milliseconds(100), [&] {
    const int now_running = ++running;
    int seen = max_running.load();
    while (seen < now_running &&
           !max_running.compare_exchange_weak(seen, now_running)) {
    }
    // Counted before it is logged, so that once the log shows a start the
    // count has it (the check below ran before the increment now and then).
    const int run = ++runs;
    log_.Record("start");
    if (run == 1) {
      release_.Wait();  // the first run overruns 5 periods
      --running;
      throw std::runtime_error("the overrunning run ends");
    }
    --running;
  });
  clock_.Advance(milliseconds(100));
  ASSERT_TRUE(log_.WaitForCount(1));
  for (int i = 0; i < 5; ++i) clock_.Advance(milliseconds(100));
  clock_.Advance(milliseconds(50));
  EXPECT_EQ(runs.load(), 1) << "a period started while the last one ran";
  release_.Open();
  ASSERT_TRUE(rearmed.Wait()) << "the overrunning run never ended";
  clock_.Advance(milliseconds(50));
  ASSERT_TRUE(log_.WaitForCount(2));
  service_->Stop();
  EXPECT_THAT(Runs(), ElementsAre(Ran{"start", 100}, Ran{"start", 700}));
  EXPECT_EQ(max_running.load(), 1);
}

TEST_F(TimerServiceTest, CancelFromInsideARepeatStopsIt) {
  Make();
  TimerId id;
  int runs = 0;
  std::atomic<bool> cancel_result{false};
  id = service_->Every(milliseconds(100), [&] {
    log_.Record("tick");
    if (++runs == 2) cancel_result = service_->Cancel(id);
  });
  for (int i = 0; i < 6; ++i) Advance(milliseconds(100));
  EXPECT_TRUE(cancel_result);
  EXPECT_THAT(Runs(), ElementsAre(Ran{"tick", 100}, Ran{"tick", 200}));
  EXPECT_EQ(service_->size(), 0u);
}

TEST_F(TimerServiceTest, RescheduleOfARepeatRestartsItsPhase) {
  Make();
  TimerId id = service_->Every(milliseconds(100), Log("tick"));
  Advance(milliseconds(100));
  Advance(milliseconds(30));
  ASSERT_TRUE(service_->Reschedule(id, milliseconds(20)));  // at 150
  for (int i = 0; i < 25; ++i) Advance(milliseconds(10));
  EXPECT_THAT(Runs(), ElementsAre(Ran{"tick", 100}, Ran{"tick", 150},
                                  Ran{"tick", 250}, Ran{"tick", 350}));
}

// Reschedule(id, 0) means "run at once", from inside the repeat's own run
// as from outside: after the run that asked for it, it runs again at once,
// and a period after that. (It was dropped until the next period.)
TEST_F(TimerServiceTest, RescheduleToNowFromInsideARepeatRunsItAgainAtOnce) {
  Make();
  TimerId id;
  int runs = 0;
  std::atomic<bool> rescheduled{false};
  id = service_->Every(milliseconds(100), [&] {
    log_.Record("tick");
    if (++runs == 1) rescheduled = service_->Reschedule(id, Duration::zero());
  });
  Advance(milliseconds(100));  // the run, then the one it asked for
  ASSERT_TRUE(log_.WaitForCount(2)) << "the rescheduled run did not come";
  EXPECT_TRUE(rescheduled);
  Advance(milliseconds(99));
  Advance(milliseconds(1));
  EXPECT_THAT(Runs(), ElementsAre(Ran{"tick", 100}, Ran{"tick", 100},
                                  Ran{"tick", 200}));
}

TEST_F(TimerServiceTest, RescheduleToNowFromOutsideRunsARepeatAtOnce) {
  Make();
  const TimerId id = service_->Every(milliseconds(100), Log("tick"));
  Advance(milliseconds(50));
  ASSERT_TRUE(service_->Reschedule(id, Duration::zero()));
  ASSERT_TRUE(log_.WaitForCount(1));
  Advance(milliseconds(99));
  Advance(milliseconds(1));
  EXPECT_THAT(Runs(), ElementsAre(Ran{"tick", 50}, Ran{"tick", 150}));
}

// After a late wake-up (here: time jumps 16 ms at once), overdue callbacks
// start in deadline order, also across shards (timers added from eight
// threads, which spread them over the shards).
TEST(TimerServiceOrderTest, OverdueCallbacksStartInDeadlineOrderAcrossShards) {
  ManualClock clock;
  EventLog<int> log(clock);  // outlives the service's workers
  TimerService service(TimerServiceOptions{
      .tick = milliseconds(1), .workers = 1, .shards = 8, .clock = &clock});
  std::vector<std::thread> adders;
  for (int t = 0; t < 8; ++t) {
    adders.emplace_back([&, t] {
      for (int i = t; i < 16; i += 8) {
        service.After(milliseconds(1 + i), [&log, i] { log.Record(i); });
      }
    });
  }
  for (std::thread& t : adders) t.join();
  clock.Advance(milliseconds(16));
  ASSERT_TRUE(log.WaitForCount(16));
  EXPECT_THAT(log.values(), ElementsAre(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13,
                                 14, 15));
}

TEST_F(TimerServiceTest, CallbacksMayUseTheService) {
  Make();
  service_->After(milliseconds(10), [this] {
    log_.Record("first");
    service_->After(milliseconds(10), Log("second"));
  });
  Advance(milliseconds(10));
  Advance(milliseconds(10));
  EXPECT_THAT(Runs(), ElementsAre(Ran{"first", 10}, Ran{"second", 20}));
}

TEST_F(TimerServiceTest, ThrowingCallbacksAreReportedAndRepeatsGoOn) {
  std::atomic<int> errors{0};
  Make(1, [&](std::exception_ptr e) {
    try {
      std::rethrow_exception(e);
    } catch (const std::runtime_error& error) {
      if (std::string(error.what()) == "boom") ++errors;
    }
  });
  service_->Every(milliseconds(100), [this] {
    log_.Record("tick");
    throw std::runtime_error("boom");
  });
  service_->After(milliseconds(150), [] { throw std::runtime_error("boom"); });
  for (int i = 0; i < 3; ++i) Advance(milliseconds(100));
  EXPECT_THAT(Runs(), ElementsAre(Ran{"tick", 100}, Ran{"tick", 200},
                                  Ran{"tick", 300}));
  EXPECT_EQ(errors.load(), 4);
  EXPECT_EQ(service_->callback_errors(), 4u);
}

// Every run that throws is counted, before on_error sees it (so a handler
// that reads the count finds its own error in it), also without on_error
// (the message goes to stderr); runs that return are not counted; and the
// service goes on.
TEST_F(TimerServiceTest, ThrowingCallbacksAreCountedBeforeTheyAreReported) {
  for (const bool with_on_error : {true, false}) {
    SCOPED_TRACE(with_on_error ? "with on_error" : "stderr");
    std::vector<std::uint64_t> seen;  // on the single worker only
    std::function<void(std::exception_ptr)> on_error;
    if (with_on_error) {
      on_error = [&](std::exception_ptr) {
        seen.push_back(service_->callback_errors());
      };
    }
    Make(1, on_error);
    const std::size_t logged = log_.size();
    const TimePoint t0 = clock_.Now();
    EXPECT_EQ(service_->callback_errors(), 0u);
    service_->Every(milliseconds(100), [this] {
      log_.Record("tick");
      throw std::runtime_error("repeat down");
    });
    service_->After(milliseconds(150), [] { throw 7; });  // not std::exception
    service_->After(milliseconds(250), Log("fine"));  // runs at 300 ms
    ::testing::internal::CaptureStderr();
    Advance(milliseconds(100));
    EXPECT_EQ(service_->callback_errors(), 1u);
    Advance(milliseconds(100));
    EXPECT_EQ(service_->callback_errors(), 3u);
    Advance(milliseconds(100));
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(service_->callback_errors(), 4u);
    if (with_on_error) {
      EXPECT_THAT(seen, ElementsAre(1u, 2u, 3u, 4u));
      EXPECT_THAT(err, IsEmpty());
    } else {
      EXPECT_THAT(err, ::testing::HasSubstr("repeat down"));
      EXPECT_THAT(err, ::testing::HasSubstr("a non-standard exception"));
    }
    service_.reset();
    std::vector<std::pair<std::string, long>> runs;
    const auto events = log_.events();
    for (std::size_t i = logged; i < events.size(); ++i) {
      runs.emplace_back(events[i].event,
                        std::chrono::duration_cast<milliseconds>(
                            events[i].at - t0).count());
    }
    EXPECT_THAT(runs, ElementsAre(Ran{"tick", 100}, Ran{"tick", 200},
                                  Ran{"fine", 300}, Ran{"tick", 300}));
  }
}

TEST_F(TimerServiceTest, StopDiscardsWhatHasNotStartedAndLaterCallsFail) {
  Make();
  TimerId id = service_->After(seconds(1), Log("a"));
  service_->Every(seconds(1), Log("b"));
  EXPECT_EQ(service_->size(), 2u);
  service_->Stop();
  service_->Stop();
  EXPECT_EQ(service_->size(), 0u);
  EXPECT_FALSE(service_->Cancel(id));
  EXPECT_FALSE(service_->Reschedule(id, seconds(1)));
  EXPECT_FALSE(service_->After(seconds(1), Log("c")).valid());
  EXPECT_FALSE(service_->Every(seconds(1), Log("c")).valid());
  clock_.Advance(seconds(10));
  EXPECT_THAT(Runs(), IsEmpty());
}

TEST_F(TimerServiceTest, StopFromInsideACallbackReturns) {
  Make();
  service_->After(milliseconds(10), [&] {
    service_->Stop();  // must not wait for itself
    log_.Record("returned");
  });
  clock_.Advance(milliseconds(10));
  EXPECT_TRUE(log_.WaitForCount(1));
}

}  // namespace
}  // namespace tickwheel
