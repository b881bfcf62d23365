// SPDX-License-Identifier: Apache-2.0
#include "cluster_phases.h"

#include <signal.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "bench_cluster.h"
#include "bench_util.h"
#include "cli/blocking_http_client.h"
#include "load_client.h"
#include "store/pg_connection.h"
#include "store/postgres_timer_store.h"
#include "support/server_process.h"
#include "support/webhook_receiver.h"

namespace tickwheel::bench {
namespace {

namespace json = boost::json;
using testing::Delivery;
using testing::ServerProcess;
using testing::TempDir;
using testing::WebhookReceiver;

constexpr char kNowhere[] =
    "http://127.0.0.1:9/x";  // creates that never come due

using Cluster = BenchCluster;

// Runs `work(node)` on a thread per node and returns the wall seconds until
// all returned.
double OnEveryNode(Cluster& cluster, const std::function<void(int)>& work) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int i = 0; i < cluster.size(); ++i) threads.emplace_back(work, i);
  for (auto& t : threads) t.join();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

// Transactions committed in `cluster`'s database since it had `before`,
// once the backends have reported them; the nodes' background work (lease
// renewals, heartbeats) is a few a second.
double CommitsSince(Cluster& cluster, double before) {
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  return cluster.Commits() - before;
}

// Batch creates: 4 connections with one node, 2 per node with three.
json::object BatchCreates(const ClusterOptions& o, int nodes) {
  Cluster cluster(o.binary, o.pg, o.shards, "batch" + std::to_string(nodes), nodes);
  const std::int64_t far = NowMs() + 3'600'000;
  const int connections = nodes == 1 ? 4 : 2;
  const double commits = cluster.Commits();
  auto meters = cluster.Meters();
  const double seconds = OnEveryNode(cluster, [&](int i) {
    CreateBatches(
        cluster.node(i), "b" + std::to_string(i) + "-",
        ShareOf(o.batch_total, nodes, i), 1000, connections,
        [&](std::uint64_t) { return far; }, kNowhere);
  });
  json::object r = Cluster::Stop(meters);
  r["per_s"] = static_cast<double>(o.batch_total) / seconds;
  r["connections"] = connections * nodes;
  r["transactions_per_s"] = CommitsSince(cluster, commits) / seconds;
  return r;
}

// Single creates: 64 connections in all, spread evenly over the nodes.
json::object SingleCreates(const ClusterOptions& o, int nodes) {
  Cluster cluster(o.binary, o.pg, o.shards, "single" + std::to_string(nodes), nodes);
  const std::int64_t far = NowMs() + 3'600'000;
  std::vector<LoadResult> results(static_cast<std::size_t>(nodes));
  const double commits = cluster.Commits();
  auto meters = cluster.Meters();
  OnEveryNode(cluster, [&](int i) {
    const int connections = 64 / nodes + (i < 64 % nodes ? 1 : 0);
    const std::string prefix = "s" + std::to_string(i) + "-";
    results[static_cast<std::size_t>(i)] = RunLoad(
        "127.0.0.1", cluster.node(i).port(), connections, UINT64_MAX,
        std::chrono::milliseconds(static_cast<int>(o.single_seconds * 1000)),
        "/v1/timers",
        [&](std::uint64_t n) {
          return Timer(prefix + std::to_string(n), far, kNowhere);
        },
        201);
  });
  json::object r = Cluster::Stop(meters);
  double ok = 0, seconds = 0;
  std::uint64_t failed = 0;
  for (const LoadResult& l : results) {
    ok += static_cast<double>(l.ok);
    failed += l.failed;
    seconds = std::max(seconds, l.seconds);
  }
  r["per_s"] = ok / seconds;
  r["failed"] = failed;
  // Group commit: creates per PostgreSQL transaction (the peer: one).
  r["creates_per_transaction"] =
      ok / std::max(1.0, CommitsSince(cluster, commits));
  return r;
}

json::object Herd(const ClusterOptions& o, int nodes) {
  WebhookReceiver receiver(1);
  Cluster cluster(o.binary, o.pg, o.shards, "herd" + std::to_string(nodes), nodes);
  const std::int64_t t0 = NowMs() + 8000;
  OnEveryNode(cluster, [&](int i) {
    CreateBatches(
        cluster.node(i), "h" + std::to_string(i) + "-",
        ShareOf(o.herd, nodes, i), 10'000, 2,
        [&](std::uint64_t k) {
          return t0 + static_cast<std::int64_t>(k % 1000);
        },
        receiver.url());
  });
  const std::uint64_t total = o.herd;
  const double commits = cluster.Commits();
  if (NowMs() >= t0)
    std::fprintf(stderr, "  warning: creating the herd took longer than 8 s\n");
  std::this_thread::sleep_for(
      std::chrono::milliseconds(std::max<std::int64_t>(0, t0 - NowMs())));
  auto meters = cluster.Meters();
  const bool all = receiver.WaitFor(total, std::chrono::seconds(300));
  // Late duplicates, if any, would arrive shortly after.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  json::object r = Cluster::Stop(meters);
  const std::vector<Delivery> d = receiver.deliveries();
  json::object late = LatenessStats(d);
  std::int64_t last = 0;
  for (const Delivery& x : d) last = std::max(last, x.received_ms);
  const auto [distinct, duplicates] = Distinct(d);
  r["timers"] = total;
  r["all_delivered"] = all && distinct == total;
  r["duplicates"] = duplicates;
  r["lateness"] = late;
  const double span =
      static_cast<double>(late["first_to_last_ms"].as_int64()) / 1000.0;
  r["per_s"] = static_cast<double>(total) / std::max(span, 0.001);
  r["drain_ms"] = last - t0;  // from the first due time to the last delivery
  // Claims and outcomes are written in batches: deliveries per PostgreSQL
  // transaction (the peer: 50 a claim, then 50 an outcome).
  r["deliveries_per_transaction"] =
      static_cast<double>(total) /
      std::max(1.0, CommitsSince(cluster, commits));
  return r;
}

// Timers due evenly over 6 s; 2 s in, node0 is SIGKILLed. Its shards'
// timers due from the kill on are overdue until the others take them.
json::object Failover(const ClusterOptions& o) {
  WebhookReceiver receiver(1);
  Cluster cluster(o.binary, o.pg, o.shards, "failover", 3, o.failover_lease_ms);
  const std::int64_t t0 = NowMs() + 3000;
  const std::uint64_t n = o.failover_timers;
  auto due = [&](std::uint64_t i) {
    return t0 + static_cast<std::int64_t>(i * 6000 / n);
  };
  CreateBatches(cluster.node(1), "f", n, 1000, 2, due, receiver.url());
  const std::vector<int> owners = cluster.Owners();
  std::this_thread::sleep_for(std::chrono::milliseconds(
      std::max<std::int64_t>(0, t0 + 2000 - NowMs())));
  const std::int64_t kill_ms = NowMs();
  cluster.node(0).Kill();
  const bool all = receiver.WaitFor(n, std::chrono::seconds(60));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const std::vector<Delivery> d = receiver.deliveries();
  // The dead node's timers due between the kill and a lease later: overdue
  // at the takeover for sure.
  std::map<std::string, std::int64_t> first_received;
  for (const Delivery& x : d) {
    auto [it, fresh] = first_received.emplace(x.id, x.received_ms);
    if (!fresh) it->second = std::min(it->second, x.received_ms);
  }
  std::int64_t first = INT64_MAX, last = INT64_MIN, overdue = 0, missing = 0;
  std::int64_t dead_max_late = 0, others_max_late = 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    const std::string id = "f" + std::to_string(i);
    const std::int64_t at = due(i);
    auto it = first_received.find(id);
    const bool dead_node = cluster.OwnerOf(owners, id) == 0;
    if (it == first_received.end()) {
      ++missing;
      continue;
    }
    if (dead_node && at >= kill_ms && at < kill_ms + o.failover_lease_ms) {
      ++overdue;
      first = std::min(first, it->second);
      last = std::max(last, it->second);
    }
    std::int64_t& worst = dead_node ? dead_max_late : others_max_late;
    worst = std::max(worst, it->second - at);
  }
  const auto [distinct, duplicates] = Distinct(d);
  json::object r;
  r["lease_ms"] = o.failover_lease_ms;
  r["timers"] = n;
  r["dead_node_shards"] = std::count(owners.begin(), owners.end(), 0);
  r["overdue_timers"] = overdue;
  r["kill_to_first_overdue_ms"] = first == INT64_MAX ? -1 : first - kill_ms;
  r["kill_to_all_overdue_ms"] = last == INT64_MIN ? -1 : last - kill_ms;
  r["dead_node_max_late_ms"] = dead_max_late;
  r["other_nodes_max_late_ms"] = others_max_late;
  r["all_delivered"] = all && missing == 0 && distinct == n;
  r["missing"] = missing;
  r["duplicates"] = duplicates;
  // What the survivors counted as sent again after taking over attempts
  // the dead node had claimed (its outcome unknown): the only duplicates
  // expected.
  double counted = 0;
  for (int i = 1; i < cluster.size(); ++i) {
    counted +=
        std::max(0.0, Metric(cluster.node(i).address(),
                             "tickwheel_duplicates_after_recovery_total"));
  }
  r["duplicates_counted_by_nodes"] = counted;
  r["early"] = LatenessStats(d).at("early");
  return r;
}

// Timers due 200 ms after they are created, one at a time through a
// keep-alive connection to each node; even ones through a node that does
// not own their shard (it announces them to the owner), odd ones through
// the owner.
json::object Handoff(const ClusterOptions& o) {
  WebhookReceiver receiver(1);
  Cluster cluster(o.binary, o.pg, o.shards, "handoff", 3);
  const std::vector<int> owners = cluster.Owners();
  std::vector<std::unique_ptr<server::BlockingHttpClient>> clients;
  for (int i = 0; i < cluster.size(); ++i) {
    clients.push_back(std::make_unique<server::BlockingHttpClient>(
        cluster.node(i).address()));
  }
  std::set<std::string> handed_off;
  int failed = 0;
  for (int i = 0; i < o.handoff_timers; ++i) {
    const std::string id = "ho" + std::to_string(i);
    const int owner = cluster.OwnerOf(owners, id);
    const int via = i % 2 == 0 ? (owner + 1) % cluster.size() : owner;
    if (via != owner) handed_off.insert(id);
    if (clients[static_cast<std::size_t>(via)]
            ->Call("POST", "/v1/timers",
                   Timer(id, NowMs() + 200, receiver.url()))
            .status != 201) {
      ++failed;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const bool all =
      receiver.WaitFor(static_cast<std::size_t>(o.handoff_timers - failed),
                       std::chrono::seconds(30));
  std::vector<Delivery> remote, local;
  for (const Delivery& d : receiver.deliveries()) {
    (handed_off.count(d.id) ? remote : local).push_back(d);
  }
  json::object r;
  r["all_delivered"] = all;
  r["failed_creates"] = failed;
  r["via_other_node"] = LatenessStats(remote);
  r["via_owner"] = LatenessStats(local);
  return r;
}

}  // namespace

ClusterOptions QuickClusterOptions(ClusterOptions o) {
  o.failover_timers = 1'500;
  o.handoff_timers = 100;
  return o;
}

json::object RunClusterPhases(const ClusterOptions& o) {
  json::object out;
  out["shards"] = o.shards;
  out["batch_total"] = o.batch_total;
  out["herd_size"] = o.herd;
  for (int nodes : {1, 3}) {
    const std::string key = nodes == 1 ? "one_node" : "three_nodes";
    json::object n;
    std::fprintf(stderr, "cluster, %d node(s): batch creates\n", nodes);
    n["batch_creates"] = BatchCreates(o, nodes);
    std::fprintf(stderr, "cluster, %d node(s): single creates\n", nodes);
    n["single_creates"] = SingleCreates(o, nodes);
    if (o.creates_only) {
      out[key] = std::move(n);
      continue;
    }
    std::fprintf(stderr, "cluster, %d node(s): herd\n", nodes);
    n["herd"] = Herd(o, nodes);
    out[key] = std::move(n);
  }
  if (o.creates_only) return out;
  std::fprintf(stderr, "cluster: failover\n");
  out["failover"] = Failover(o);
  std::fprintf(stderr, "cluster: hand-off\n");
  out["handoff"] = Handoff(o);
  return out;
}

}  // namespace tickwheel::bench
