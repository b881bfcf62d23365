// SPDX-License-Identifier: Apache-2.0
// make bench-server's flow phases (docs/flows.md): a herd of timers due in
// the same second to one receiver, throttled by a flow's rate or its
// in-flight cap, on one node and on three; a second flow's lateness beside
// it; and what flow control costs when its limits are far above the load.
#ifndef TICKWHEEL_BENCH_SERVER_FLOW_PHASES_H_
#define TICKWHEEL_BENCH_SERVER_FLOW_PHASES_H_

#include <boost/json.hpp>
#include <cstdint>
#include <string>
#include <vector>

namespace tickwheel::bench {

struct FlowPhaseOptions {
  std::string binary;  // build/tickwheel
  std::string pg;      // conninfo for the 3-node phases ("": one node only)
  int shards = 256;
  std::uint64_t herd = 100'000;      // timers due within one second
  double rate = 1000;                // the rate phase's flow
  std::int64_t burst = 100;
  std::int64_t max_in_flight = 4;    // the cap phase's flow
  int receiver_delay_ms = 2;         // the cap phase's receiver: time per request
  int second_flow_timers = 2'000;    // the other flow: due evenly over 10 s
  int overhead_rounds = 3;           // paired rounds, flow control off / on
  std::uint64_t memory_timers = 1'000'000;  // pending vs due behind a 10/s flow
  // For a look at one phase (--flow-nodes 3 --flow-rate-only; not for the
  // report, which wants them all): the node counts, and the rate phase only.
  std::vector<int> nodes = {1, 3};
  bool rate_only = false;
};

// Runs the phases and returns their figures:
//   rate.{one_node,three_nodes}   the herd at `rate` (+ `burst`): the
//       receiver's deliveries per second (each whole second from the first:
//       max and p50), the most in any 1000 ms window, all delivered,
//       duplicates; the same of the attempts' starts (from the attempt
//       logs: what the limits bound); and the second flow's lateness
//       during it
//   cap.{one_node,three_nodes}    the herd with max_in_flight: the
//       receiver's peak concurrency, deliveries/s
//   second_flow_alone.{...}       the second flow without the herd
//   overhead                      the herd (no limits) with flow control off
//       (no settings) and on (limits far above it), deliveries/s and the
//       servers' CPU time per delivery in each round, and their ratios on /
//       off (medians of the rounds)
//   memory                        `memory_timers` pending (due in an hour)
//       and as many due now behind a flow of 10/s, each on a fresh
//       embedded server: RSS and timers in memory
boost::json::object RunFlowPhases(const FlowPhaseOptions& o);

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_BENCH_SERVER_FLOW_PHASES_H_
