// SPDX-License-Identifier: Apache-2.0
// The flows' lines of /metrics, with bounded label cardinality.
#ifndef TICKWHEEL_SERVER_FLOW_FLOW_METRICS_H_
#define TICKWHEEL_SERVER_FLOW_FLOW_METRICS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "flow/flow_gate.h"
#include "flow/flow_settings.h"

namespace tickwheel::server {

// Appends, per configured flow (label flow="<key>") and for all the others
// summed (flow="other"): tickwheel_flow_sent_total, _delivered_total and
// _throttled_total (counters), tickwheel_flow_in_flight and
// tickwheel_flow_backlog (gauges), and tickwheel_flow_paused for configured
// flows. `flows` and `retired`: this node's (Scheduler::Flows,
// RetiredFlows); `stored_backlog`: for flows with more due in the store
// than in memory, how many are due there (this node's shards).
void AppendFlowMetrics(std::string& out, const std::vector<FlowStats>& flows,
                       const FlowStats& retired,
                       const std::map<std::string, FlowSettings>& configured,
                       const std::map<std::string, std::int64_t>& stored_backlog);

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_FLOW_FLOW_METRICS_H_
