// SPDX-License-Identifier: Apache-2.0
// The harness checks itself: every backend, driven through the same
// workloads as the benchmark but on a few thousand timers in real time,
// fires each timer exactly once and never early, never fires a cancelled
// one, and fires a moved one at its new time only.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "asio_backend.h"
#include "gozero_keyed_wheel.h"
#include "gozero_list_wheel_backend.h"
#include "gozero_wheel_backend.h"
#include "indexed_heap_backend.h"
#include "libev_backend.h"
#include "libevent_backend.h"
#include "libuv_backend.h"
#include "tickwheel_backend.h"
#include "workloads.h"

namespace tickwheel::bench {
namespace {

// Runs the loop until timer `last` has fired (the checks schedule it after
// every other deadline, so a timer that should not be pending shows up
// first), without waiting for timers wrongly left pending far ahead.
template <typename B>
void RunUntilFired(B& b, FireLog& log, std::uint32_t last) {
  while ((log.size() == 0 || log.id(log.size() - 1) != last) &&
         !log.overflowed() && b.RunOnce(log)) {
  }
}

template <typename B>
class BenchCheckTest : public testing::Test {};

using Backends =
    testing::Types<TickwheelBackend, GoZeroListWheelBackend, GoZeroWheelBackend,
                   GoZeroWheel<64>,
                   IndexedHeapBackend, LibeventBackend, LibuvBackend,
                   LibevBackend, AsioBackend>;
TYPED_TEST_SUITE(BenchCheckTest, Backends);

// Timers due in 300-400 ms; then a quarter each is left alone, moved
// earlier (20-120 ms), moved later (400-500 ms) or cancelled; a last timer
// at 550 ms proves the cancelled ones stayed silent until after their
// deadlines. Bounds on lateness are generous (the machine is shared).
TYPED_TEST(BenchCheckTest, FiresEachOnceNeverEarlyMovedAtNewTimeCancelledNever) {
  constexpr std::size_t kN = 4000;
  Random rng(7);
  const std::int64_t start = NowNs();
  TypeParam b(kN + 1, start, Storage::kPrefault);
  std::vector<std::int64_t> deadline(kN + 1);
  std::vector<bool> cancelled(kN + 1);
  b.SetNow(start);
  for (std::uint32_t i = 0; i < kN; ++i) {
    deadline[i] = start + rng.Between(300 * kMs, 400 * kMs);
    b.Insert(i, deadline[i]);
  }
  const std::int64_t t = NowNs();
  b.SetNow(t);
  for (std::uint32_t i = 0; i < kN; ++i) {
    switch (i % 4) {
      case 1:
        deadline[i] = t + rng.Between(20 * kMs, 120 * kMs);
        b.Move(i, deadline[i]);
        break;
      case 2:
        deadline[i] = t + rng.Between(400 * kMs, 500 * kMs);
        b.Move(i, deadline[i]);
        break;
      case 3:
        b.Cancel(i);
        cancelled[i] = true;
        break;
    }
  }
  deadline[kN] = t + 550 * kMs;
  b.Insert(kN, deadline[kN]);

  FireLog log(kN + 1, /*timestamps=*/true);
  RunUntilFired(b, log, kN);
  ASSERT_FALSE(log.overflowed());
  std::vector<int> fired(kN + 1);
  for (std::size_t k = 0; k < log.size(); ++k) {
    const std::uint32_t id = log.id(k);
    ASSERT_LE(id, kN);
    ++fired[id];
    EXPECT_GE(log.time(k), deadline[id]) << "timer " << id << " fired early";
    if (id % 4 == 1 && id < kN) {
      // Moved earlier: fired at the new time, not at the old (>= 300 ms).
      EXPECT_LE(log.time(k), deadline[id] + 150 * kMs) << "timer " << id;
    }
  }
  for (std::uint32_t i = 0; i <= kN; ++i) {
    EXPECT_EQ(fired[i], cancelled[i] ? 0 : 1) << "timer " << i;
  }
}

// The benchmark's own fire workload: it throws if a timer is lost, fires
// twice or early, and reports a lateness for every timer.
TYPED_TEST(BenchCheckTest, FireWorkloadAccountsForEveryTimer) {
  Random rng(3);
  const FireResult r = Fire<TypeParam>(3000, 50 * kMs, rng);
  ASSERT_EQ(r.lateness_ns.size(), 3000u);
  EXPECT_GE(r.lateness_ns.front(), 0);
  EXPECT_GT(r.cpu_ns_per_timer, 0);
}

// After the fill, move and cancel workloads, the ids not cancelled are
// pending: moved to 20-60 ms from now, each fires once, never early, and
// no cancelled one fires before a last timer at 100 ms.
TYPED_TEST(BenchCheckTest, AfterFillMoveCancelExactlyTheRestFires) {
  constexpr std::size_t kN = 5000;
  Random rng(5);
  TypeParam b(kN + 1, NowNs(), Storage::kOnDemand);
  EXPECT_GT(Fill(b, kN, rng), 0);
  EXPECT_GT(Move(b, kN, 2 * kN, rng), 0);
  std::vector<bool> cancelled;
  EXPECT_GT(Cancel(b, kN, kN / 2, rng, &cancelled), 0);
  ASSERT_EQ(cancelled.size(), kN);

  const std::int64_t now = NowNs();
  b.SetNow(now);
  std::vector<std::int64_t> deadline(kN);
  for (std::uint32_t i = 0; i < kN; ++i) {
    if (cancelled[i]) continue;
    deadline[i] = now + rng.Between(20 * kMs, 60 * kMs);
    b.Move(i, deadline[i]);
  }
  b.Insert(kN, now + 100 * kMs);
  FireLog log(kN + 1, /*timestamps=*/true);
  RunUntilFired(b, log, kN);
  ASSERT_FALSE(log.overflowed());
  std::vector<int> fired(kN);
  ASSERT_GT(log.size(), 0u);
  EXPECT_EQ(log.id(log.size() - 1), kN) << "the last timer did not fire last";
  for (std::size_t k = 0; k + 1 < log.size(); ++k) {
    const std::uint32_t id = log.id(k);
    ASSERT_LT(id, kN);
    ++fired[id];
    EXPECT_GE(log.time(k), deadline[id]) << "timer " << id << " fired early";
  }
  for (std::uint32_t i = 0; i < kN; ++i) {
    EXPECT_EQ(fired[i], cancelled[i] ? 0 : 1) << "timer " << i;
  }
}

TYPED_TEST(BenchCheckTest, IdleFiresOnlyTheWakeUp) {
  Random rng(9);
  EXPECT_GE(Idle<TypeParam>(1000, 50 * kMs, rng), 0.0);
}

// The idle-connections workload: heartbeats keep every connection open
// (it throws if one times out) and the loop keeps pace.
TYPED_TEST(BenchCheckTest, ConnectionsWorkloadKeepsEveryConnectionOpen) {
  Random rng(13);
  const ConnectionsResult r = Connections<TypeParam>(2000, 100 * kMs, rng);
  EXPECT_GT(r.moves_per_second, 0);
}

// The keyed peer, go-zero's design: set timers fire once, at or after their
// delay; removed ones never; moved ones at their new time; a set of an
// existing key replaces its value. 10 ms interval, 16 slots (circles).
TEST(GoZeroKeyedWheelCheck, FiresSetAndMovedTimersOnceNeverRemovedOnes) {
  using Clock = std::chrono::steady_clock;
  std::mutex mu;
  std::map<int, std::vector<std::pair<int, Clock::time_point>>> fired;
  std::map<int, Clock::time_point> due;
  {
    GoZeroKeyedWheel<int, int> wheel(
        std::chrono::milliseconds(10), 16, [&](const int& k, const int& v) {
          std::lock_guard lock(mu);
          fired[k].emplace_back(v, Clock::now());
        });
    const auto start = Clock::now();
    for (int k = 0; k < 60; ++k) {
      const auto delay = std::chrono::milliseconds(20 + 5 * k);  // up to 315 ms
      wheel.SetTimer(k, 1, delay);
      due[k] = start + delay;
    }
    for (int k = 0; k < 60; k += 3) wheel.RemoveTimer(k);
    for (int k = 1; k < 60; k += 3) {
      const auto delay = std::chrono::milliseconds(k % 2 ? 30 : 250);
      due[k] = Clock::now() + delay;
      wheel.MoveTimer(k, delay);
    }
    for (int k = 2; k < 60; k += 6) wheel.SetTimer(k, 2, std::chrono::milliseconds(100));
    for (int k = 2; k < 60; k += 6) due[k] = Clock::now() + std::chrono::milliseconds(100);
    std::this_thread::sleep_until(start + std::chrono::milliseconds(700));
  }
  std::lock_guard lock(mu);
  for (int k = 0; k < 60; ++k) {
    if (k % 3 == 0) {
      EXPECT_EQ(fired.count(k), 0u) << "removed key " << k << " fired";
      continue;
    }
    ASSERT_EQ(fired[k].size(), 1u) << "key " << k;
    // go-zero rounds a delay down to whole intervals: at most one early.
    EXPECT_GE(fired[k][0].second, due.at(k) - std::chrono::milliseconds(10)) << "key " << k;
    EXPECT_EQ(fired[k][0].first, k % 6 == 2 ? 2 : 1) << "key " << k;
  }
}

}  // namespace
}  // namespace tickwheel::bench
