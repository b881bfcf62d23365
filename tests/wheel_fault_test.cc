// SPDX-License-Identifier: Apache-2.0
// Allocation failures inside the wheel: this binary replaces operator new
// (plain, which the wheel's slot vectors use, and aligned) with one that
// can be told to fail, so it has its own executable.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <new>
#include <optional>
#include <stdexcept>
#include <vector>

#include "tickwheel/wheel.h"

namespace {
int fail_after = -1;  // allocations left before one fails; -1: never
int injected = 0;     // allocations made to fail so far
}  // namespace

void* operator new(std::size_t n) {
  if (fail_after >= 0 && fail_after-- == 0) {
    ++injected;
    throw std::bad_alloc();
  }
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

void* operator new(std::size_t n, std::align_val_t alignment) {
  if (fail_after >= 0 && fail_after-- == 0) {
    ++injected;
    throw std::bad_alloc();
  }
  const std::size_t align = std::max<std::size_t>(
      static_cast<std::size_t>(alignment), sizeof(void*));
  void* p = std::aligned_alloc(align, (n + align - 1) / align * align);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}

namespace tickwheel {
namespace {

using std::chrono::nanoseconds;

// A callback throws, and re-filing the slot's other timers then runs out of
// memory at some allocation: nothing is lost, the structure stays sound, and
// the next Advance fires every timer that is left.
TEST(WheelFaultTest, OutOfMemoryWhileRefilingAfterAThrowLosesNoTimer) {
  const int injected_before = injected;
  for (int failing = 0; failing < 6; ++failing) {
    SCOPED_TRACE("allocation " + std::to_string(failing) + " fails");
    const TimePoint origin{};
    Wheel<int> wheel(nanoseconds(1), origin);
    for (int d : {128, 130, 131, 132}) wheel.Schedule(origin + nanoseconds(d), d);
    wheel.Advance(origin + nanoseconds(64), [](int) {});
    std::vector<int> fired;
    try {
      wheel.Advance(origin + nanoseconds(200), [&](int d) {
        const std::runtime_error boom("boom " + std::to_string(d));
        fail_after = failing;
        throw boom;  // copying it allocates nothing
      });
    } catch (const std::exception&) {
    }
    fail_after = -1;
    ASSERT_NO_THROW(wheel.CheckInvariants());
    EXPECT_EQ(wheel.size(), 3u);
    wheel.Advance(origin + nanoseconds(1000),
                  [&](int d) { fired.push_back(d); });
    EXPECT_EQ(fired.size(), 3u);
    EXPECT_TRUE(wheel.empty());
    ASSERT_NO_THROW(wheel.CheckInvariants());
  }
  EXPECT_GT(injected, injected_before) << "no allocation was made to fail";
}

// Moves earlier than their slots queue a re-file each; applying the queue
// then runs out of memory. The Reschedule that found the queue full throws
// and moves nothing; NextDeadline answers the wheel's time (never too late);
// Cancel still works; and once memory is back every timer fires exactly
// once, at its latest deadline, and cancelled ones never.
TEST(WheelFaultTest, OutOfMemoryApplyingQueuedMovesLosesNoMove) {
  const TimePoint origin{};
  Wheel<int> wheel(nanoseconds(1), origin);
  constexpr int kTimers = 100;
  std::vector<TimerId> ids;
  std::vector<std::int64_t> due(kTimers);
  for (int i = 0; i < kTimers; ++i) {
    due[i] = 1'000'000 + i;  // a level-3 slot
    ids.push_back(wheel.Schedule(origin + nanoseconds(due[i]), i));
  }
  // Each to its own level-0 slot: every re-file allocates that slot's array.
  int moved = 0;
  bool threw = false;
  for (int i = 0; i < kTimers && !threw; ++i) {
    if (i == 64) fail_after = 0;  // the queue is full: applying it fails
    try {
      ASSERT_TRUE(wheel.Reschedule(ids[i], origin + nanoseconds(10 + 2 * i)));
      due[i] = 10 + 2 * i;
      ++moved;
    } catch (const std::bad_alloc&) {
      threw = true;
    }
  }
  ASSERT_TRUE(threw);
  EXPECT_EQ(moved, 64);
  fail_after = 0;
  const std::optional<TimePoint> next = wheel.NextDeadline();
  ASSERT_TRUE(next.has_value());
  EXPECT_LE(*next, origin + nanoseconds(10));
  EXPECT_TRUE(wheel.Cancel(ids[1]));  // queue full, memory gone: done at once
  EXPECT_FALSE(wheel.Cancel(ids[1]));
  due[1] = -1;
  fail_after = -1;
  ASSERT_NO_THROW(wheel.CheckInvariants());
  std::vector<int> fired;
  std::int64_t now = 0;
  while (auto at = wheel.NextDeadline()) {
    now = std::max<std::int64_t>(now + 1, at->time_since_epoch().count());
    wheel.Advance(origin + nanoseconds(now), [&](int i) {
      EXPECT_GE(now, due[i]) << "timer " << i << " fired early";
      EXPECT_LE(now, due[i] + 1) << "timer " << i << " fired late";
      fired.push_back(i);
    });
  }
  std::sort(fired.begin(), fired.end());
  std::vector<int> expected;
  for (int i = 0; i < kTimers; ++i) {
    if (due[i] >= 0) expected.push_back(i);
  }
  EXPECT_EQ(fired, expected);
  ASSERT_NO_THROW(wheel.CheckInvariants());
}

}  // namespace
}  // namespace tickwheel
