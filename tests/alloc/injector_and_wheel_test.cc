// SPDX-License-Identifier: Apache-2.0
// The injector itself (its operator new is the one called; defined in this
// file for the whole binary), and Wheel<T> swept over its allocations.
// alloc_sweep.h says what every sweep checks.
#define TICKWHEEL_DEFINE_ALLOC_INJECTOR
#include "alloc/alloc_sweep.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "tickwheel/wheel.h"

namespace tickwheel {
namespace {

using testing::alloc::FailNth;
using testing::alloc::FailOthers;

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

}  // namespace
}  // namespace tickwheel
