// SPDX-License-Identifier: Apache-2.0
// make bench-server's cluster phases: `tickwheel serve --postgres` with one
// and three nodes on the PostgreSQL the bench started, measured the way the
// embedded server and the SKIP LOCKED peer are (server_bench.cc).
#ifndef TICKWHEEL_BENCH_SERVER_CLUSTER_PHASES_H_
#define TICKWHEEL_BENCH_SERVER_CLUSTER_PHASES_H_

#include <boost/json.hpp>
#include <cstdint>
#include <string>

namespace tickwheel::bench {

struct ClusterOptions {
  std::string binary;  // build/tickwheel
  // A key=value libpq conninfo of a PostgreSQL where the bench may create
  // and drop databases (each phase gets a fresh one: " dbname=..." is
  // appended).
  std::string pg;
  int shards = 256;
  std::uint64_t batch_total = 400'000;  // timers created per batch phase
  double single_seconds = 10;           // length of a single-create phase
  std::uint64_t herd = 100'000;         // timers due within the same second
  int failover_lease_ms = 2000;
  std::uint64_t failover_timers = 6'000;  // due evenly over 6 s around the kill
  int handoff_timers = 400;               // half through the owner, half not
  // Only the create phases (for paired before/after runs; report.py needs
  // every phase, so such output is not for cluster_bench.json).
  bool creates_only = false;
};

// The options for `make bench-server QUICK=1`: fewer failover and hand-off
// timers (the create and herd sizes are the peer's, set by the caller).
ClusterOptions QuickClusterOptions(ClusterOptions o);

// Runs every cluster phase (each on fresh nodes and a fresh database) and
// returns their figures:
//   creates     batch (1000 per request) and single (64 connections in
//               all), with 1 and 3 nodes, clients spread over the nodes
//   herd        `herd` timers due within one second, 1 and 3 nodes:
//               deliveries/s first to last, drain time from the first due
//   failover    3 nodes with a short lease; one is SIGKILLed while timers
//               of its shards come due: kill to their delivery by the others
//   handoff     timers due 200 ms after their create, created through a
//               node that does not own their shard or through the owner:
//               lateness of each
// Progress goes to stderr. Exits the process if a cluster cannot start.
boost::json::object RunClusterPhases(const ClusterOptions& o);

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_BENCH_SERVER_CLUSTER_PHASES_H_
