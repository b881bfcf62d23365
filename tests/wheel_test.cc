// SPDX-License-Identifier: Apache-2.0
#include "tickwheel/wheel.h"

#include <sys/resource.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace tickwheel {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

const TimePoint kOrigin = TimePoint(hours(24));

// Collects fired payloads.
struct Recorder {
  std::vector<int> fired;
  auto Callback() {
    return [this](int v) { fired.push_back(v); };
  }
};

TEST(WheelTest, RejectsNonPositiveTick) {
  EXPECT_THROW(Wheel<int>(nanoseconds(0), kOrigin), std::invalid_argument);
  try {
    Wheel<int> wheel(milliseconds(-5), kOrigin);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("tick must be positive"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("-5000000ns"));
  }
}

TEST(WheelTest, StartsEmpty) {
  Wheel<int> wheel(milliseconds(1), kOrigin);
  EXPECT_TRUE(wheel.empty());
  EXPECT_EQ(wheel.size(), 0u);
  EXPECT_EQ(wheel.NextDeadline(), std::nullopt);
  Recorder r;
  EXPECT_EQ(wheel.Advance(kOrigin + hours(1000), r.Callback()), 0u);
  wheel.CheckInvariants();
}

TEST(WheelTest, FiresAtDeadlineAndNeverBefore) {
  Wheel<int> wheel(milliseconds(1), kOrigin);
  Recorder r;
  wheel.Schedule(kOrigin + milliseconds(50), 1);
  EXPECT_EQ(wheel.size(), 1u);
  EXPECT_EQ(wheel.Advance(kOrigin + milliseconds(49), r.Callback()), 0u);
  EXPECT_EQ(wheel.Advance(kOrigin + milliseconds(50) - nanoseconds(1),
                          r.Callback()),
            0u);
  EXPECT_THAT(r.fired, IsEmpty());
  EXPECT_EQ(wheel.Advance(kOrigin + milliseconds(50), r.Callback()), 1u);
  EXPECT_THAT(r.fired, ElementsAre(1));
  EXPECT_TRUE(wheel.empty());
  wheel.CheckInvariants();
}

TEST(WheelTest, DeadlineBetweenTicksRoundsUpToTheNextTick) {
  Wheel<int> wheel(milliseconds(10), kOrigin);
  Recorder r;
  wheel.Schedule(kOrigin + milliseconds(15), 1);
  // Due at 15 ms: not at the 10 ms tick, not at 19.999 ms (still tick 1),
  // at the 20 ms tick: never early, at most one tick late.
  wheel.Advance(kOrigin + milliseconds(10), r.Callback());
  wheel.Advance(kOrigin + milliseconds(20) - nanoseconds(1), r.Callback());
  EXPECT_THAT(r.fired, IsEmpty());
  wheel.Advance(kOrigin + milliseconds(20), r.Callback());
  EXPECT_THAT(r.fired, ElementsAre(1));
}

TEST(WheelTest, PastDeadlineFiresAtNextAdvance) {
  Wheel<int> wheel(milliseconds(1), kOrigin);
  Recorder r;
  wheel.Advance(kOrigin + seconds(10), r.Callback());
  wheel.Schedule(kOrigin + seconds(1), 1);   // long past
  wheel.Schedule(kOrigin + seconds(10), 2);  // exactly now
  wheel.Schedule(kOrigin - hours(5), 3);     // before the origin
  EXPECT_EQ(wheel.NextDeadline(), kOrigin + seconds(10));
  wheel.CheckInvariants();
  EXPECT_EQ(wheel.Advance(kOrigin + seconds(10), r.Callback()), 3u);
  EXPECT_THAT(r.fired, ElementsAre(1, 2, 3));
}

TEST(WheelTest, FiresInDeadlineOrderAcrossLevels) {
  Wheel<int> wheel(milliseconds(1), kOrigin);
  Recorder r;
  // Deadlines on levels 0 to 4, scheduled out of order.
  const int ms[] = {5000000, 3, 70, 300000, 4100, 64, 63, 262144, 1};
  for (int m : ms) wheel.Schedule(kOrigin + milliseconds(m), m);
  wheel.CheckInvariants();
  wheel.Advance(kOrigin + hours(2), r.Callback());
  EXPECT_THAT(r.fired, ElementsAre(1, 3, 63, 64, 70, 4100, 262144, 300000,
                                   5000000));
  wheel.CheckInvariants();
}

TEST(WheelTest, CancelledTimerNeverFires) {
  Wheel<int> wheel(milliseconds(1), kOrigin);
  Recorder r;
  TimerId a = wheel.Schedule(kOrigin + milliseconds(5), 1);
  wheel.Schedule(kOrigin + milliseconds(5), 2);
  EXPECT_TRUE(wheel.Cancel(a));
  EXPECT_EQ(wheel.size(), 1u);
  EXPECT_FALSE(wheel.Cancel(a));  // already cancelled
  wheel.Advance(kOrigin + seconds(1), r.Callback());
  EXPECT_THAT(r.fired, ElementsAre(2));
  wheel.CheckInvariants();
}

TEST(WheelTest, StaleIdsAreRefusedEvenAfterTheirSlotIsReused) {
  Wheel<int> wheel(milliseconds(1), kOrigin);
  Recorder r;
  TimerId fired = wheel.Schedule(kOrigin + milliseconds(1), 1);
  wheel.Advance(kOrigin + milliseconds(1), r.Callback());
  EXPECT_FALSE(wheel.Cancel(fired));
  EXPECT_FALSE(wheel.Reschedule(fired, kOrigin + seconds(1)));
  // The freed node is reused for the next timer, under a new generation.
  TimerId reused = wheel.Schedule(kOrigin + milliseconds(10), 2);
  EXPECT_NE(reused, fired);
  EXPECT_FALSE(wheel.Cancel(fired));
  EXPECT_EQ(wheel.size(), 1u);
  EXPECT_FALSE(wheel.Cancel(TimerId()));
  EXPECT_TRUE(wheel.Cancel(reused));
}

TEST(WheelTest, RescheduleLaterFiresOnlyAtTheNewTime) {
  Wheel<int> wheel(milliseconds(1), kOrigin);
  Recorder r;
  TimerId id = wheel.Schedule(kOrigin + milliseconds(10), 1);
  EXPECT_TRUE(wheel.Reschedule(id, kOrigin + milliseconds(5000)));
  wheel.CheckInvariants();
  wheel.Advance(kOrigin + milliseconds(4999), r.Callback());
  EXPECT_THAT(r.fired, IsEmpty());
  EXPECT_EQ(wheel.size(), 1u);
  wheel.CheckInvariants();
  wheel.Advance(kOrigin + milliseconds(5000), r.Callback());
  EXPECT_THAT(r.fired, ElementsAre(1));
}

TEST(WheelTest, RescheduleEarlierFiresAtTheNewTime) {
  Wheel<int> wheel(milliseconds(1), kOrigin);
  Recorder r;
  TimerId id = wheel.Schedule(kOrigin + hours(1), 1);
  EXPECT_TRUE(wheel.Reschedule(id, kOrigin + milliseconds(3)));
  EXPECT_EQ(wheel.NextDeadline(), kOrigin + milliseconds(3));
  wheel.Advance(kOrigin + milliseconds(3), r.Callback());
  EXPECT_THAT(r.fired, ElementsAre(1));
  EXPECT_TRUE(wheel.empty());
}

TEST(WheelTest, RescheduleIntoThePastFiresAtNextAdvance) {
  Wheel<int> wheel(milliseconds(1), kOrigin);
  Recorder r;
  wheel.Advance(kOrigin + seconds(5), r.Callback());
  TimerId id = wheel.Schedule(kOrigin + seconds(60), 1);
  EXPECT_TRUE(wheel.Reschedule(id, kOrigin));
  wheel.CheckInvariants();
  wheel.Advance(kOrigin + seconds(5), r.Callback());
  EXPECT_THAT(r.fired, ElementsAre(1));
}

TEST(WheelTest, HeartbeatPushesTheTimeoutBackRepeatedly) {
  // The idle-timeout case: every heartbeat moves the deadline 30 s ahead.
  Wheel<int> wheel(milliseconds(1), kOrigin);
  Recorder r;
  TimerId id = wheel.Schedule(kOrigin + seconds(30), 7);
  for (int s = 1; s <= 100; ++s) {
    wheel.Advance(kOrigin + seconds(s), r.Callback());
    ASSERT_TRUE(wheel.Reschedule(id, kOrigin + seconds(s + 30)));
  }
  wheel.CheckInvariants();
  wheel.Advance(kOrigin + seconds(129), r.Callback());
  EXPECT_THAT(r.fired, IsEmpty());
  wheel.Advance(kOrigin + seconds(130), r.Callback());
  EXPECT_THAT(r.fired, ElementsAre(7));
}

TEST(WheelTest, DelaysOfYearsKeepNanosecondPrecision) {
  const auto years = hours(24 * 365 * 200);
  Wheel<int> wheel(nanoseconds(1), kOrigin);
  Recorder r;
  wheel.Schedule(kOrigin + years + nanoseconds(7), 1);
  wheel.CheckInvariants();
  wheel.Advance(kOrigin + years + nanoseconds(6), r.Callback());
  EXPECT_THAT(r.fired, IsEmpty());
  EXPECT_LE(*wheel.NextDeadline(), kOrigin + years + nanoseconds(7));
  wheel.Advance(kOrigin + years + nanoseconds(7), r.Callback());
  EXPECT_THAT(r.fired, ElementsAre(1));
}

TEST(WheelTest, DeadlinesBeyondTheRangeAreClampedNotWrapped) {
  Wheel<int> wheel(nanoseconds(1), kOrigin);
  Recorder r;
  wheel.Schedule(TimePoint::max(), 1);
  wheel.Schedule(kOrigin + seconds(1), 2);
  wheel.Advance(kOrigin + hours(24 * 365 * 100), r.Callback());
  EXPECT_THAT(r.fired, ElementsAre(2));
  ASSERT_TRUE(wheel.NextDeadline().has_value());
  wheel.Advance(TimePoint::max(), r.Callback());
  EXPECT_THAT(r.fired, ElementsAre(2, 1));
}

TEST(WheelTest, AdvanceBackwardsDoesNothing) {
  Wheel<int> wheel(milliseconds(1), kOrigin);
  Recorder r;
  wheel.Advance(kOrigin + seconds(10), r.Callback());
  wheel.Schedule(kOrigin + seconds(11), 1);
  EXPECT_EQ(wheel.Advance(kOrigin + seconds(1), r.Callback()), 0u);
  EXPECT_EQ(wheel.Advance(kOrigin + seconds(11), r.Callback()), 1u);
}

TEST(WheelTest, TicklessLoopDrainsWithBoundedCalls) {
  Wheel<int> wheel(milliseconds(1), kOrigin);
  std::mt19937_64 rng(7);
  const int n = 10000;
  for (int i = 0; i < n; ++i) {
    wheel.Schedule(kOrigin + milliseconds(rng() % 100000000), i);
  }
  std::size_t calls = 0;
  std::size_t fired = 0;
  TimePoint last = kOrigin;
  while (auto next = wheel.NextDeadline()) {
    ASSERT_GE(*next, last) << "NextDeadline went backwards";
    last = *next;
    fired += wheel.Advance(*next, [](int) {});
    ++calls;
    ASSERT_LE(calls, std::size_t{n} * 6) << "the loop spins";
  }
  EXPECT_EQ(fired, std::size_t{n});
  // Each call either fires a timer or moves a slot down a level; with 10k
  // timers spread over 28 hours most slots hold one timer, so about
  // (levels crossed + 1) calls per timer, and never more than 6.
  RecordProperty("advance_calls", std::to_string(calls));
}

TEST(WheelTest, OnExpireMayScheduleCancelAndReschedule) {
  Wheel<int> wheel(milliseconds(1), kOrigin);
  std::vector<int> fired;
  TimerId victim = wheel.Schedule(kOrigin + milliseconds(20), 99);
  TimerId moved = wheel.Schedule(kOrigin + milliseconds(20), 50);
  wheel.Schedule(kOrigin + milliseconds(10), 1);
  wheel.Advance(kOrigin + milliseconds(30), [&](int v) {
    fired.push_back(v);
    if (v == 1) {
      EXPECT_TRUE(wheel.Cancel(victim));
      EXPECT_TRUE(wheel.Reschedule(moved, kOrigin + milliseconds(25)));
      wheel.Schedule(kOrigin + milliseconds(15), 2);  // later in this call
      wheel.Schedule(kOrigin + milliseconds(40), 3);  // after this call
    }
  });
  EXPECT_THAT(fired, ElementsAre(1, 2, 50));
  EXPECT_EQ(wheel.size(), 1u);
  wheel.CheckInvariants();
}

TEST(WheelTest, TimerMadeDueInsideACallbackWaitsForTheNextAdvance) {
  Wheel<int> wheel(milliseconds(1), kOrigin);
  std::vector<int> fired;
  wheel.Schedule(kOrigin + milliseconds(10), 1);
  auto rearm_now = [&](int v) {
    fired.push_back(v);
    if (v < 3) wheel.Schedule(kOrigin, v + 1);  // already due
  };
  EXPECT_EQ(wheel.Advance(kOrigin + milliseconds(10), rearm_now), 1u);
  EXPECT_EQ(wheel.NextDeadline(), kOrigin + milliseconds(10));
  EXPECT_EQ(wheel.Advance(kOrigin + milliseconds(10), rearm_now), 1u);
  EXPECT_EQ(wheel.Advance(kOrigin + milliseconds(10), rearm_now), 1u);
  EXPECT_THAT(fired, ElementsAre(1, 2, 3));
  EXPECT_TRUE(wheel.empty());
}

// A pending timer that a callback moves to the tick being processed waits
// for the next Advance too, as one it schedules there does, also when the
// slot it is in comes up later in this Advance (here: the slot being
// processed, the lazy path that only stores the deadline).
TEST(WheelTest, TimerMovedToTheTickBeingProcessedWaitsForTheNextAdvance) {
  Wheel<int> wheel(nanoseconds(1), kOrigin);
  // Both in the level-1 slot starting at tick 192.
  wheel.Schedule(kOrigin + nanoseconds(192), 1);
  const TimerId later = wheel.Schedule(kOrigin + nanoseconds(250), 2);
  std::vector<int> fired;
  auto move_to_now = [&](int v) {
    fired.push_back(v);
    if (v == 1) {
      EXPECT_TRUE(wheel.Reschedule(later, kOrigin + nanoseconds(192)));
    }
  };
  EXPECT_EQ(wheel.Advance(kOrigin + nanoseconds(300), move_to_now), 1u);
  EXPECT_THAT(fired, ElementsAre(1));
  EXPECT_NO_THROW(wheel.CheckInvariants());
  EXPECT_EQ(wheel.Advance(kOrigin + nanoseconds(300), move_to_now), 1u);
  EXPECT_THAT(fired, ElementsAre(1, 2));
  EXPECT_TRUE(wheel.empty());
}

TEST(WheelTest, ThrowingCallbackConsumesOnlyItsTimer) {
  Wheel<int> wheel(milliseconds(1), kOrigin);
  std::vector<int> fired;
  for (int i = 0; i < 5; ++i) wheel.Schedule(kOrigin + milliseconds(100), i);
  wheel.Schedule(kOrigin + milliseconds(200), 10);
  auto callback = [&](int v) {
    fired.push_back(v);
    if (v == 2) throw std::runtime_error("boom");
  };
  EXPECT_THROW(wheel.Advance(kOrigin + milliseconds(300), callback),
               std::runtime_error);
  EXPECT_EQ(wheel.size(), 3u);
  wheel.CheckInvariants();
  wheel.Advance(kOrigin + milliseconds(300), callback);
  EXPECT_THAT(fired, ElementsAre(0, 1, 2, 3, 4, 10));
  EXPECT_TRUE(wheel.empty());
  wheel.CheckInvariants();
}

TEST(WheelTest, AdvanceFromInsideOnExpireIsRefused) {
  Wheel<int> wheel(milliseconds(1), kOrigin);
  wheel.Schedule(kOrigin, 1);
  EXPECT_THROW(wheel.Advance(kOrigin,
                             [&](int) { wheel.Advance(kOrigin, [](int) {}); }),
               std::logic_error);
}

// Counts live instances, to check that payloads are destroyed exactly once.
struct Counted {
  static inline int live = 0;
  explicit Counted(int v) : value(std::make_unique<int>(v)) { ++live; }
  Counted(Counted&& other) noexcept : value(std::move(other.value)) { ++live; }
  Counted& operator=(Counted&&) = delete;
  ~Counted() { --live; }
  std::unique_ptr<int> value;  // move-only
};

TEST(WheelTest, MoveOnlyPayloadsAreDestroyedExactlyOnce) {
  Counted::live = 0;
  {
    Wheel<Counted> wheel(milliseconds(1), kOrigin);
    TimerId a = wheel.Schedule(kOrigin + milliseconds(1), Counted(1));
    wheel.Schedule(kOrigin + milliseconds(2), Counted(2));
    wheel.Schedule(kOrigin + hours(1), Counted(3));
    EXPECT_EQ(Counted::live, 3);
    wheel.Cancel(a);
    EXPECT_EQ(Counted::live, 2);
    int sum = 0;
    wheel.Advance(kOrigin + milliseconds(2),
                  [&](Counted c) { sum += *c.value; });
    EXPECT_EQ(sum, 2);
    EXPECT_EQ(Counted::live, 1);
  }
  EXPECT_EQ(Counted::live, 0);  // the wheel destroyed the pending one
}

TEST(WheelTest, NextDeadlineIsNeverLaterThanTheEarliestDueTime) {
  Wheel<int> wheel(milliseconds(1), kOrigin);
  wheel.Schedule(kOrigin + milliseconds(5000), 1);
  EXPECT_LE(*wheel.NextDeadline(), kOrigin + milliseconds(5000));
  wheel.Schedule(kOrigin + milliseconds(7), 2);
  EXPECT_EQ(*wheel.NextDeadline(), kOrigin + milliseconds(7));
}

// Reserve only moves the slab's growth forward: timers scheduled into the
// reserved room, and beyond it, behave as without it.
TEST(WheelTest, ReserveChangesNothingButWhenTheSlabGrows) {
  Wheel<int> wheel(milliseconds(1), kOrigin);
  wheel.Reserve(10'000);
  wheel.Reserve(100);  // never shrinks
  EXPECT_TRUE(wheel.empty());
  std::mt19937 rng(3);
  std::vector<int> due_ms(12'000);
  for (int i = 0; i < 12'000; ++i) {
    due_ms[i] = static_cast<int>(rng() % 1000) + 1;
    wheel.Schedule(kOrigin + milliseconds(due_ms[i]), i);
  }
  EXPECT_NO_THROW(wheel.CheckInvariants());
  std::size_t fired = 0;
  for (int ms = 1; ms <= 1000; ++ms) {
    wheel.Advance(kOrigin + milliseconds(ms), [&](int i) {
      EXPECT_EQ(due_ms[i], ms) << "timer " << i;
      ++fired;
    });
  }
  EXPECT_EQ(fired, 12'000u);
  EXPECT_NO_THROW(wheel.CheckInvariants());
}

// Reserve touches the room it makes also in a chunk that exists already
// (chunk 0 exists from the first Schedule on): scheduling into it then takes
// no page fault for the nodes. Nodes of 4 KiB, one page each: untouched,
// the 4000 Schedules below took a fault per node (4000); touched, a few for
// the slot's array. (Where the kernel backs such memory with huge pages
// unasked, the faults were fewer either way.)
TEST(WheelTest, ReserveTouchesTheRoomItMakesInAChunkThatExists) {
  struct Page {
    char bytes[4000] = {};
  };
  Wheel<Page> wheel(milliseconds(1), kOrigin);
  wheel.Schedule(kOrigin + milliseconds(5), Page{});  // chunk 0 exists now
  wheel.Reserve(4001);
  auto minor_faults = [] {
    rusage usage{};
    getrusage(RUSAGE_THREAD, &usage);
    return usage.ru_minflt;
  };
  const long before = minor_faults();
  for (int i = 0; i < 4000; ++i) wheel.Schedule(kOrigin + milliseconds(7), Page{});
  const long faults = minor_faults() - before;
  EXPECT_LT(faults, 400) << "Schedule faulted in its nodes' pages";
  EXPECT_EQ(wheel.size(), 4001u);
}

TEST(WheelTest, ReserveBeyondTheIdSpaceIsRefused) {
  Wheel<int> wheel(milliseconds(1), kOrigin);
  EXPECT_THROW(wheel.Reserve(std::size_t{1} << 32), std::length_error);
  EXPECT_TRUE(wheel.empty());
}

// 100k timers due within 300 ms, time moving a millisecond at a time: the
// big level-1 slots are moved down a share per Advance (spread cascades).
// Every timer still fires exactly at its tick.
TEST(WheelTest, DenseBurstFiresEachTimerAtItsTick) {
  Wheel<int> wheel(milliseconds(1), kOrigin + nanoseconds(123'456));
  std::mt19937 rng(11);
  std::vector<int> due_ms(100'000);
  for (int i = 0; i < 100'000; ++i) {
    due_ms[i] = static_cast<int>(rng() % 300) + 1;
    wheel.Schedule(kOrigin + milliseconds(due_ms[i]), i);
  }
  std::vector<int> fired_at(100'000, -1);
  for (int ms = 0; ms <= 301; ++ms) {
    wheel.Advance(kOrigin + milliseconds(ms) + nanoseconds(123'456),
                  [&](int i) {
                    EXPECT_EQ(fired_at[i], -1) << "timer " << i << " twice";
                    fired_at[i] = ms;
                  });
    if (ms % 37 == 0) {
      ASSERT_NO_THROW(wheel.CheckInvariants());
    }
  }
  for (int i = 0; i < 100'000; ++i) {
    ASSERT_EQ(fired_at[i], due_ms[i]) << "timer " << i;
  }
  EXPECT_TRUE(wheel.empty());
}

// Two slots at different levels can start at the same tick. A throw from the
// first leaves the second for the next Advance, which fires it.
TEST(WheelTest, ThrowWhileTwoSlotsStartTogetherLeavesTheOtherForNextAdvance) {
  const TimePoint origin{};
  Wheel<int> wheel(nanoseconds(1), origin);
  wheel.Schedule(origin + nanoseconds(128), 1);  // level 1, starts at 128
  wheel.Advance(origin + nanoseconds(64), [](int) {});
  wheel.Schedule(origin + nanoseconds(128), 2);  // level 0, also at 128
  EXPECT_THROW(wheel.Advance(origin + nanoseconds(200),
                             [](int) { throw std::runtime_error("boom"); }),
               std::runtime_error);
  EXPECT_NO_THROW(wheel.CheckInvariants());
  Recorder recorder;
  wheel.Advance(origin + nanoseconds(200), recorder.Callback());
  EXPECT_EQ(recorder.fired.size(), 1u);
  EXPECT_TRUE(wheel.empty());
}

TEST(WheelTest, CheckInvariantsMayBeCalledFromOnExpire) {
  Wheel<int> wheel(milliseconds(1), kOrigin);
  for (int i = 0; i < 3; ++i) wheel.Schedule(kOrigin + milliseconds(5), i);
  int calls = 0;
  wheel.Advance(kOrigin + milliseconds(5), [&](int) {
    EXPECT_NO_THROW(wheel.CheckInvariants());
    ++calls;
  });
  EXPECT_EQ(calls, 3);
}

}  // namespace
}  // namespace tickwheel
