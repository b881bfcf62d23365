// SPDX-License-Identifier: Apache-2.0
// How a cluster splits a flow's budget over its nodes: shares never add up
// to more than the limits, follow demand, and grow only into what the
// others leave.
#include "flow/flow_budget.h"

#include <gtest/gtest.h>

#include <random>

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
  auto split = SplitBudget(Limits(1000, 100, 8), {{"a", 300}, {"b", 100}, {"c", 0}});
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
    const FlowLimits limits = Limits(1 + rng() % 5000, 1 + rng() % 200, 1 + rng() % 50);
    std::vector<NodeDemand> nodes;
    for (int i = 0; i < 1 + static_cast<int>(rng() % 7); ++i) {
      nodes.push_back({"n" + std::to_string(i), static_cast<std::int64_t>(rng() % 4 ? rng() % 10000 : 0)});
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
  ShareStep step = StepShare(limits, Held(kNoRateLimit, 0, 2), Held(0, 0, 0), 6);
  EXPECT_EQ(step.use.max_in_flight, 2);     // nothing new beyond 2
  EXPECT_EQ(step.record.max_in_flight, 6);  // the 6 in flight still count
}

}  // namespace
}  // namespace tickwheel::server
