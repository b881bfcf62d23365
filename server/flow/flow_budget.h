// SPDX-License-Identifier: Apache-2.0
// How a cluster splits a limited flow's budget (its rate, burst and
// in-flight cap) over the nodes that have timers of it due: the pure part
// of flow/flow_shares.h, so it can be tested alone.
#ifndef TICKWHEEL_SERVER_FLOW_FLOW_BUDGET_H_
#define TICKWHEEL_SERVER_FLOW_FLOW_BUDGET_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "flow/flow_limits.h"

namespace tickwheel::server {

struct NodeDemand {
  std::string node;
  std::int64_t demand = 0;  // timers waiting for the flow there (and in flight)
};

// Each node's fair target: the burst and the cap are split in whole units
// in proportion to demand (largest remainders, ties to the smaller node id),
// and the rate in proportion to demand over the nodes that got a burst unit
// (a node needs a token to start anything, so a rate share without one is
// useless). Nodes without demand get nothing. Every node appears in the
// result; the targets add up to at most `limits` in each dimension. Paused:
// nothing for anyone. Dimensions the flow does not limit stay unlimited.
std::map<std::string, FlowLimits> SplitBudget(const FlowLimits& limits,
                                              const std::vector<NodeDemand>& nodes);

// What a node may hold now, going towards `target` while the other nodes
// hold `others` (their unexpired shares, summed): at most its target, and
// growth only into what the others leave of `limits` (so the shares never
// add up to more); a rate only with at least one burst unit. `use` is what
// the node may start attempts with; `record` is what goes in its row: the
// same, but a cap share never below the `in_flight` attempts it has (those
// slots stay taken until their answers come).
struct ShareStep {
  FlowLimits use;
  FlowLimits record;
};
ShareStep StepShare(const FlowLimits& limits, const FlowLimits& target, const FlowLimits& others,
                    std::int64_t in_flight);

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_FLOW_FLOW_BUDGET_H_
