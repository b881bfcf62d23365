// SPDX-License-Identifier: Apache-2.0
// make bench-server's schedule phases (ONLY=schedules): `schedules`
// recurring schedules every `every_ms` (60 s), their times spread evenly
// over the period by anchor_ms, on the embedded store and on a 3-node
// cluster; beside each, the same number of one-shot timers due at the same
// rate on a fresh server of the same kind.
//
// For each of the two deployments:
//   create    schedules/s through POST /v1/schedules, one per request on
//             64 keep-alive connections (spread over the nodes), and the
//             server's CPU per create; beside it timers/s through POST
//             /v1/timers the same way (a short run on the same server just
//             before)
//   memory    server RSS (every node) and store bytes per schedule, and
//             per pending one-shot timer
//   firing    one whole period after every schedule was created (each
//             schedule fires once in it): occurrences delivered per second,
//             lateness (received - due) p50/p99/max of those due in it,
//             any not delivered, and the server's (and the machine's) CPU
//             per occurrence; the same for the one-shot timers
//   steady    the one-shot timers' second minute, during which as many
//             more are created for the minute after (batch API, paced):
//             a create and a delivery per timer, under the same load
//
// The schedules start (start_ms) after all of them are created, so that
// creating is measured alone: the start is estimated from a probe of the
// create rate (schedules that never fire in the measurement); a create that
// overran it is reported ("fired_during_create").
#ifndef TICKWHEEL_BENCH_SERVER_SCHEDULE_PHASES_H_
#define TICKWHEEL_BENCH_SERVER_SCHEDULE_PHASES_H_

#include <boost/json.hpp>
#include <cstdint>
#include <string>

namespace tickwheel::bench {

struct SchedulePhaseOptions {
  std::string binary;  // build/tickwheel
  std::string pg;      // conninfo of the bench's PostgreSQL; empty: no cluster
  std::uint64_t schedules = 1'000'000;
  std::uint64_t cluster_schedules = 0;  // the cluster's size; 0: `schedules`
  std::int64_t every_ms = 60'000;
  int connections = 64;             // for the creates
  double timer_create_seconds = 5;  // the timer single-create run
  int shards = 256;
  std::size_t payload_pad = 0;  // bytes of padding in each schedule's payload
};

// Runs the phases (embedded, then the 3-node cluster if `pg` is set);
// the JSON that bench/server/schedule_report.py renders. Progress on
// stderr; exits the process if a server cannot start.
boost::json::object RunSchedulePhases(const SchedulePhaseOptions& o);

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_BENCH_SERVER_SCHEDULE_PHASES_H_
