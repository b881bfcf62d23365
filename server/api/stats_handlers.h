// SPDX-License-Identifier: Apache-2.0
// What the web console's overview and cluster view read: GET /v1/stats,
// GET /v1/stats/series and GET /v1/cluster.
#ifndef TICKWHEEL_SERVER_API_STATS_HANDLERS_H_
#define TICKWHEEL_SERVER_API_STATS_HANDLERS_H_

#include <boost/asio/awaitable.hpp>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "api/http_response.h"
#include "common/metrics.h"
#include "common/metrics_series.h"
#include "common/server_clock.h"
#include "api/store_calls.h"
#include "store/timer_store.h"

namespace tickwheel::server {

// What the server tells the stats about itself.
struct StatsSources {
  std::string node_id;         // cluster mode: this node; "" for the embedded store
  std::string instance;        // cluster mode: this process (lease owners are node_id#instance)
  std::int64_t started_ms = 0;  // wall clock at start
  // Timers loaded in memory (the scheduler's window); none if unset.
  std::function<std::size_t()> in_window;
};

// GET /v1/stats: {"counts": {state: n}, "in_window", "due": {"minute",
// "hour", "day", "cap"}, "store": {"kind", "bytes"}, "version",
// "started_ms", "uptime_ms", "now_ms", "mode": "node"|"cluster", "node"?}.
// "due" counts the due index (pending and delivering timers, overdue ones
// included) up to kDueCap entries: a count equal to "cap" means at least
// that many.
//
// GET /v1/stats/series: {"bucket_ms", "points": [{"t", "created",
// "delivered", "retried", "failed" (per second), "p50", "p99" (lateness,
// ms), "attempts"}]}, the last hour, oldest first.
//
// GET /v1/cluster: {"mode": "node"} for the embedded store; in cluster mode
// {"mode": "cluster", "node", "instance", "now_ms" (the database's clock),
// "shards", "fenced_writes" (this node's), "nodes": [{"node_id",
// "instance" (the process running as it), "started_ms", "expires_ms",
// "alive", "shards", "self", "clock_offset_ms" (its wall clock minus the
// database's, null before its first heartbeat)}], "leases": [{"shard",
// "owner" (a node id; null if none ever held it), "owner_instance",
// "epoch", "expires_ms", "live" (held now)}]}.
//
// Thread safety: any number of calls at once.
class StatsHandlers {
 public:
  static constexpr std::size_t kDueCap = 100'000;

  // Everything must outlive this.
  StatsHandlers(StoreCalls& calls, ServerClock& clock, const Metrics& metrics,
                const MetricsSeries& series, StatsSources sources);

  boost::asio::awaitable<HttpResponse> Stats() const;
  HttpResponse Series() const;
  boost::asio::awaitable<HttpResponse> Cluster() const;

 private:
  StoreCalls& calls_;
  const TimerStore& store_;
  ServerClock& clock_;
  const Metrics& metrics_;
  const MetricsSeries& series_;
  const StatsSources sources_;
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_API_STATS_HANDLERS_H_
