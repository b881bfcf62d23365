// SPDX-License-Identifier: Apache-2.0
// The create phases of make bench-server: durable creates, one per request
// over keep-alive with 1, 8 and 64 clients (latency p50/p99, throughput,
// server CPU per create), and through the batch API; beside them, in the
// same run and the same rounds, the peers of the same durable write: a bare
// RocksDB WriteBatch with sync (RocksDB's own concurrent writers: its write
// group is the lower bound of a group commit on this disk) and single-row
// INSERTs into PostgreSQL; and the time of one fdatasync on the data
// directory's filesystem, the floor under any durable create.
//
// Each round runs every (system, clients) pair once, in an order rotated by
// round, on a fresh server / database / table; a figure is the median round,
// and a ratio is taken round by round (against the same round's peer).
#ifndef TICKWHEEL_BENCH_SERVER_CREATE_PHASES_H_
#define TICKWHEEL_BENCH_SERVER_CREATE_PHASES_H_

#include <boost/json.hpp>
#include <string>
#include <vector>

namespace tickwheel::bench {

struct CreatePhaseOptions {
  std::string binary;    // tickwheel executable
  std::string pg;        // libpq conninfo; empty: no PostgreSQL peer
  std::string data_dir;  // where the stores live (and fdatasync is measured)
  std::vector<int> clients = {1, 8, 64};
  double seconds = 3;     // per single-create measurement
  int rounds = 3;
  std::uint64_t batch_total = 400'000;  // timers per batch measurement
  // For a look at one part (profiling): only these systems ("tickwheel",
  // "rocksdb", "postgres"; empty: all), and no batches.
  std::vector<std::string> only_systems;
  bool batches = true;
};

// Runs every phase; the JSON that bench/server/create_report.py renders.
boost::json::object RunCreatePhases(const CreatePhaseOptions& options);

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_BENCH_SERVER_CREATE_PHASES_H_
