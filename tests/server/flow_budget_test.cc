// SPDX-License-Identifier: Apache-2.0
// How a cluster splits a flow's budget over its nodes: shares never add up
// to more than the limits, follow demand, and grow only into what the
// others leave.
#include "flow/flow_budget.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <vector>

#include "common/server_clock.h"
#include "flow/flow_gate.h"
#include "flow/flow_registry.h"

namespace tickwheel::server {
namespace {

FlowLimits Limits(double rate, double burst, std::int64_t cap) {
  FlowLimits l;
  if (rate > 0) {
    l.rate_per_s = rate;
    l.burst = burst;
  }
  if (cap > 0) l.max_in_flight = cap;
  return l;
}

// Shares held (each dimension as given, 0 meaning none of it).
FlowLimits Held(double rate, double burst, std::int64_t cap) {
  return FlowLimits{.rate_per_s = rate, .burst = burst, .max_in_flight = cap};
}

TEST(FlowBudgetTest, SplitsInProportionToDemand) {
  auto split =
      SplitBudget(Limits(1000, 100, 8), {{"a", 300}, {"b", 100}, {"c", 0}});
  EXPECT_DOUBLE_EQ(split["a"].rate_per_s, 750);
  EXPECT_DOUBLE_EQ(split["b"].rate_per_s, 250);
  EXPECT_DOUBLE_EQ(split["c"].rate_per_s, 0);
  EXPECT_EQ(split["a"].burst, 75);
  EXPECT_EQ(split["b"].burst, 25);
  EXPECT_EQ(split["a"].max_in_flight, 6);
  EXPECT_EQ(split["b"].max_in_flight, 2);
  EXPECT_EQ(split["c"].max_in_flight, 0);
}

TEST(FlowBudgetTest, ASmallBurstGoesWhereMostWaitAndTheRateWithIt) {
  // A burst of 1 over three nodes: one node at a time may start anything.
  auto split = SplitBudget(Limits(10, 1, 0), {{"a", 5}, {"b", 9}, {"c", 5}});
  EXPECT_EQ(split["b"].burst, 1);
  EXPECT_DOUBLE_EQ(split["b"].rate_per_s, 10);
  EXPECT_EQ(split["a"].burst + split["c"].burst, 0);
  EXPECT_EQ(split["a"].rate_per_s + split["c"].rate_per_s, 0);
  EXPECT_FALSE(split["a"].capped());  // a dimension the flow does not limit
}

TEST(FlowBudgetTest, SharesNeverAddUpToMoreThanTheLimits) {
  std::mt19937 rng(7);
  for (int round = 0; round < 2000; ++round) {
    const FlowLimits limits =
        Limits(static_cast<double>(1 + rng() % 5000), static_cast<double>(1 + rng() % 200),
               static_cast<std::int64_t>(1 + rng() % 50));
    std::vector<NodeDemand> nodes;
    for (int i = 0; i < 1 + static_cast<int>(rng() % 7); ++i) {
      nodes.push_back(
          {"n" + std::to_string(i),
           static_cast<std::int64_t>(rng() % 4 ? rng() % 10000 : 0)});
    }
    double rate = 0, burst = 0;
    std::int64_t cap = 0;
    for (const auto& [node, share] : SplitBudget(limits, nodes)) {
      rate += share.rate_per_s;
      burst += share.burst;
      cap += share.max_in_flight;
      EXPECT_TRUE(share.burst >= 1 || share.rate_per_s == 0);
    }
    EXPECT_LE(rate, limits.rate_per_s * (1 + 1e-9));
    EXPECT_LE(burst, limits.burst);
    EXPECT_LE(cap, limits.max_in_flight);
  }
}

TEST(FlowBudgetTest, APausedFlowGetsNothing) {
  FlowLimits limits = Limits(100, 10, 4);
  limits.paused = true;
  auto split = SplitBudget(limits, {{"a", 50}});
  EXPECT_EQ(split["a"].rate_per_s, 0);
  EXPECT_EQ(split["a"].max_in_flight, 0);
}

TEST(FlowBudgetTest, GrowthTakesOnlyWhatTheOthersLeave) {
  const FlowLimits limits = Limits(1000, 100, 8);
  // The target is half, but a (dead, not yet expired) node still holds 80%.
  ShareStep step = StepShare(limits, Held(500, 50, 4), Held(800, 80, 7), 0);
  EXPECT_DOUBLE_EQ(step.use.rate_per_s, 200);
  EXPECT_EQ(step.use.burst, 20);
  EXPECT_EQ(step.use.max_in_flight, 1);
  // Once it expired (the others hold nothing), the whole target.
  step = StepShare(limits, Held(500, 50, 4), Held(0, 0, 0), 0);
  EXPECT_DOUBLE_EQ(step.use.rate_per_s, 500);
  EXPECT_EQ(step.use.max_in_flight, 4);
  // Nothing left: no burst unit, so no rate either.
  step = StepShare(limits, Held(500, 50, 4), Held(990, 100, 8), 0);
  EXPECT_EQ(step.use.burst, 0);
  EXPECT_EQ(step.use.rate_per_s, 0);
  EXPECT_EQ(step.use.max_in_flight, 0);
}

TEST(FlowBudgetTest, ACapShareIsRecordedNoLowerThanWhatIsInFlight) {
  const FlowLimits limits = Limits(0, 0, 8);
  ShareStep step =
      StepShare(limits, Held(kNoRateLimit, 0, 2), Held(0, 0, 0), 6);
  EXPECT_EQ(step.use.max_in_flight, 2);     // nothing new beyond 2
  EXPECT_EQ(step.record.max_in_flight, 6);  // the 6 in flight still count
}

// The cluster budget end to end on manual time, without PostgreSQL: three
// nodes' gates (FlowGate, shared budget) take their shares in rounds the way
// FlowShares::Round does (SplitBudget, StepShare, a table of rows with
// leases), timers come in clumps and are answered after a while, so shares
// move with demand and buckets fill in the lulls; one node dies mid-throttle
// holding a share, its row stays until its lease expires, and its timers go
// to the survivors when its shards do (after the same lease). The starts of
// all three together never exceed burst + rate * T in any window of T: the
// survivors' shares grow only into what the dead node's expired row leaves,
// and a grown share brings no tokens.
struct SimNode {
  explicit SimNode(FlowRegistry& registry)
      : gate(&registry,
             FlowGate::Options{.window_cap = 200'000, .shared_budget = true}) {}
  FlowGate gate;
  bool alive = true;
  std::int64_t round_offset_ms = 0;
  std::multimap<std::int64_t, int>
      answers;  // answer time (ms from start) -> count
};

struct ShareRow {
  FlowLimits share;
  std::int64_t demand = 0;
  std::int64_t expires_ms = 0;
};

std::size_t MaxStartsInWindow(const std::vector<std::int64_t>& starts_ms,
                              std::int64_t w_ms) {
  std::size_t best = 0, lo = 0;
  for (std::size_t hi = 0; hi < starts_ms.size(); ++hi) {
    while (starts_ms[hi] - starts_ms[lo] >= w_ms) ++lo;
    best = std::max(best, hi - lo + 1);
  }
  return best;
}

TEST(FlowBudgetTest,
     ANodeDyingMidThrottleNeverTakesTheClusterAboveTheFlowsLimits) {
  constexpr std::int64_t kStart = 1'800'000'000'000;
  constexpr std::int64_t kLeaseMs = 2000, kRoundMs = 200, kKillMs = 3000,
                         kEndMs = 40'000;
  constexpr double kRate = 40, kBurst = 12;
  const std::string key = "throttled";
  for (unsigned seed = 1; seed <= 12; ++seed) {
    ManualServerClock clock(kStart);
    FlowRegistry registry;
    registry.Set(key, FlowSettings{.rate_per_s = kRate,
                                   .burst = static_cast<std::int64_t>(kBurst)});
    const FlowLimits limits = registry.Limits(key);
    std::vector<std::unique_ptr<SimNode>> nodes;
    for (int i = 0; i < 3; ++i) {
      nodes.push_back(std::make_unique<SimNode>(registry));
      nodes.back()->round_offset_ms = i * 67;
    }
    std::map<int, ShareRow> rows;  // the shares table, by node
    std::mt19937 rng(seed);
    std::vector<std::int64_t> starts;
    // The dead node's timers waiting for the flow and in flight at the kill:
    // the survivors send them all (again, for those in flight).
    std::int64_t dead_waiting = 0, dead_in_flight = 0;
    std::size_t created = 0;
    auto add = [&](SimNode& n, std::int64_t t_ms) {
      const std::string id = std::to_string(created++);
      FlowGate::Flow& f =
          n.gate.Intern(key, clock.steady().Now(), clock.WallMs());
      n.gate.Ready(f, DueEntry{kStart + t_ms, id, key}, clock.WallMs(), false);
    };
    auto round = [&](int i, std::int64_t t_ms) {
      SimNode& n = *nodes[static_cast<std::size_t>(i)];
      const TimePoint now = clock.steady().Now();
      FlowStats mine;
      for (const FlowStats& s : n.gate.Stats(now, clock.WallMs())) {
        if (s.key == key) mine = s;
      }
      if (mine.demand == 0 &&
          mine.in_flight == 0) {  // nothing here: give it back
        n.gate.SetShare(key, std::nullopt, now, now, clock.WallMs());
        rows.erase(i);
        return;
      }
      FlowLimits others{0, 0, 0, false};
      std::vector<NodeDemand> demands;
      for (const auto& [j, row] : rows) {
        if (j == i || row.expires_ms <= t_ms) continue;
        others.rate_per_s += row.share.rate_per_s;
        others.burst += row.share.burst;
        demands.push_back({"node" + std::to_string(j), row.demand});
      }
      demands.push_back({"node" + std::to_string(i), mine.demand});
      const FlowLimits target =
          SplitBudget(limits, demands)["node" + std::to_string(i)];
      const ShareStep step = StepShare(limits, target, others, mine.in_flight);
      rows[i] = ShareRow{step.record, mine.demand, t_ms + kLeaseMs};
      n.gate.SetShare(key, step.use, now + std::chrono::milliseconds(kLeaseMs),
                      now, clock.WallMs());
    };
    for (std::int64_t t = 0; t < kEndMs; ++t) {
      // 60 timers on each node at the start (4.5 s of the flow's rate: the
      // kill comes mid-throttle), then clumps now and then on every live one.
      for (int i = 0; i < 3; ++i) {
        SimNode& n = *nodes[static_cast<std::size_t>(i)];
        if (t == 0) {
          for (int k = 0; k < 60; ++k) add(n, t);
        }
        if (n.alive && t < 20'000 && rng() % 2500 == 0) {
          for (auto k = rng() % 40; k > 0; --k) add(n, t);
        }
      }
      if (t == kKillMs) {  // killed: its row stays until it expires
        nodes[1]->alive = false;
        for (const FlowStats& s :
             nodes[1]->gate.Stats(clock.steady().Now(), clock.WallMs())) {
          if (s.key == key) {
            dead_waiting = s.waiting;
            dead_in_flight = s.in_flight;
          }
        }
      }
      if (t ==
          kKillMs + kLeaseMs) {  // its shards taken over: its timers sent again
        for (std::int64_t k = 0; k < dead_waiting + dead_in_flight; ++k)
          add(*nodes[k % 2 ? 2 : 0], t);
      }
      for (int i = 0; i < 3; ++i) {
        SimNode& n = *nodes[static_cast<std::size_t>(i)];
        if (!n.alive) continue;
        if ((t - n.round_offset_ms) % kRoundMs == 0) round(i, t);
        FlowGate::Flow* f = n.gate.Find(key);
        if (f == nullptr) continue;
        for (auto a = n.answers.begin();
             a != n.answers.end() && a->first <= t;) {
          for (int k = 0; k < a->second; ++k) {
            n.gate.Ended(*f, FlowSignal{.delivered = true},
                         clock.steady().Now(), clock.WallMs());
          }
          a = n.answers.erase(a);
        }
        std::vector<ReleasedEntry> out;
        n.gate.Release(clock.steady().Now(), clock.WallMs(), out);
        for (std::size_t k = 0; k < out.size(); ++k) starts.push_back(t);
        if (!out.empty()) {
          n.answers.emplace(t + 20 + static_cast<std::int64_t>(rng() % 400),
                            static_cast<int>(out.size()));
        }
      }
      clock.Advance(std::chrono::milliseconds(1));
    }
    // Nothing lost: every timer went (`created` counts the dead node's
    // twice; those it had in flight went twice).
    EXPECT_EQ(static_cast<std::int64_t>(starts.size()),
              static_cast<std::int64_t>(created) - dead_waiting)
        << "seed " << seed;
    EXPECT_LE(static_cast<double>(MaxStartsInWindow(starts, 1000)),
              kBurst + kRate)
        << "seed " << seed;
    EXPECT_LE(static_cast<double>(MaxStartsInWindow(starts, 3000)),
              kBurst + 3 * kRate)
        << "seed " << seed;
  }
}

}  // namespace
}  // namespace tickwheel::server
