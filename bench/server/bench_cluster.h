// SPDX-License-Identifier: Apache-2.0
// A cluster of `tickwheel serve --postgres` nodes for make bench-server's
// phases (cluster_phases.h, schedule_phases.h): started on a fresh database
// of the bench's PostgreSQL, measured per node, stopped and dropped at the
// end.
#ifndef TICKWHEEL_BENCH_SERVER_BENCH_CLUSTER_H_
#define TICKWHEEL_BENCH_SERVER_BENCH_CLUSTER_H_

#include <boost/json.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.h"
#include "cluster_phases.h"
#include "store/pg_connection.h"
#include "store/postgres_timer_store.h"
#include "support/server_process.h"

namespace tickwheel::bench {

// A connection to `conninfo`; exits the process if there is none.
std::unique_ptr<server::PgConnection> Connect(const std::string& conninfo);

// `n` nodes of `tickwheel serve --postgres` on a database of their own
// (created here, dropped by the destructor), named node0, node1, ...; the
// constructor returns once the shards are shared out (and exits the
// process if they are not within a minute).
//
// Thread safety: node(i) and OwnerOf from any thread; the rest from the
// thread that made it (one connection for its queries).
class Cluster {
 public:
  Cluster(const ClusterOptions& o, const std::string& name, int n,
          int lease_ms = 10'000)
      : admin_(Connect(o.pg)),
        db_("tickwheel_bench_" + name),
        shards_(o.shards) {
    (void)admin_->Exec("DROP DATABASE IF EXISTS " + db_ + " WITH (FORCE)");
    if (auto r = admin_->Exec("CREATE DATABASE " + db_); !r.ok()) {
      std::fprintf(stderr, "cluster: %s\n", r.status().message().c_str());
      std::exit(1);
    }
    conninfo_ = o.pg + " dbname=" + db_;
    for (int i = 0; i < n; ++i) {
      nodes_.push_back(std::make_unique<testing::ServerProcess>(
          o.binary, dir_.path() + "/node" + std::to_string(i),
          std::vector<std::string>{"--postgres", conninfo_, "--node-id",
                                   "node" + std::to_string(i), "--shards",
                                   std::to_string(o.shards), "--lease",
                                   std::to_string(lease_ms) + "ms"}));
    }
    for (auto& node : nodes_) {
      if (!node->Start()) std::exit(1);
    }
    if (!Settle()) {
      std::fprintf(stderr,
                   "cluster: the shards were not shared out within 60 s\n");
      std::exit(1);
    }
  }
  ~Cluster() {
    for (auto& node : nodes_) {
      if (node->running()) node->Terminate(30);
    }
    query_.reset();
    (void)admin_->Exec("DROP DATABASE IF EXISTS " + db_ + " WITH (FORCE)");
  }

  int size() const { return static_cast<int>(nodes_.size()); }
  testing::ServerProcess& node(int i) { return *nodes_[static_cast<std::size_t>(i)]; }

  // shard -> index of the node holding an unexpired lease on it (-1: none).
  std::vector<int> Owners() {
    if (!query_) query_ = Connect(conninfo_);
    std::vector<int> owners(static_cast<std::size_t>(shards_), -1);
    auto r = query_->Exec(
        "SELECT shard, owner FROM tickwheel_shard_leases "
        "WHERE owner IS NOT NULL AND expires_at > now()");
    if (!r.ok()) return owners;
    for (int row = 0; row < r->rows(); ++row) {
      const std::string owner(r->Text(row, 1));  // "nodeK"
      owners[static_cast<std::size_t>(r->Int(row, 0))] =
          std::stoi(owner.substr(4));
    }
    return owners;
  }
  // Transactions committed in the cluster's database so far (PostgreSQL's
  // statistics, which backends report within about a second).
  double Commits() {
    if (!query_) query_ = Connect(conninfo_);
    auto r = query_->Exec(
        "SELECT xact_commit FROM pg_stat_database WHERE datname = "
        "current_database()");
    return r.ok() && r->rows() == 1 ? static_cast<double>(r->Int(0, 0)) : 0;
  }
  // The size of the cluster's database (pg_database_size).
  double DatabaseBytes() {
    if (!query_) query_ = Connect(conninfo_);
    auto r = query_->Exec("SELECT pg_database_size(current_database())");
    return r.ok() && r->rows() == 1 ? static_cast<double>(r->Int(0, 0)) : 0;
  }
  int OwnerOf(const std::vector<int>& owners, const std::string& id) const {
    return owners[static_cast<std::size_t>(server::ShardOfId(id, shards_))];
  }

  // A CPU meter per node, started now; Stop(meters) gives the first one's
  // figures with server_cpu_pct summed over the nodes (all still running).
  std::vector<CpuMeter> Meters() {
    std::vector<CpuMeter> m;
    for (auto& node : nodes_) m.emplace_back(node->pid());
    return m;
  }
  static boost::json::object Stop(const std::vector<CpuMeter>& meters) {
    boost::json::object total = meters.front().Stop();
    double server = 0;
    for (const CpuMeter& m : meters)
      server += m.Stop().at("server_cpu_pct").as_double();
    total["server_cpu_pct"] = server;
    return total;
  }

 private:
  // Waits until every shard is held, each node holding at most its fair
  // share (so none is still giving shards back).
  bool Settle() {
    const int fair = (shards_ + size() - 1) / size();
    for (int attempt = 0; attempt < 600; ++attempt) {
      std::map<int, int> held;
      int owned = 0;
      for (int owner : Owners()) {
        if (owner >= 0) ++owned, ++held[owner];
      }
      bool fair_shares = static_cast<int>(held.size()) == size();
      for (auto [node, n] : held) fair_shares = fair_shares && n <= fair;
      if (owned == shards_ && fair_shares) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

  std::unique_ptr<server::PgConnection> admin_;
  std::unique_ptr<server::PgConnection> query_;
  std::string db_, conninfo_;
  int shards_;
  testing::TempDir dir_;
  std::vector<std::unique_ptr<testing::ServerProcess>> nodes_;
};

// Runs `work(node)` on a thread per node and returns the wall seconds until
// all returned.
double OnEveryNode(Cluster& cluster, const std::function<void(int)>& work);

// Transactions committed in `cluster`'s database since it had `before`,
// once the backends have reported them; the nodes' background work (lease
// renewals, heartbeats) is a few a second.
double CommitsSince(Cluster& cluster, double before);

// Node i's share of `total` spread over `nodes`.
std::uint64_t ShareOf(std::uint64_t total, int nodes, int i);

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_BENCH_SERVER_BENCH_CLUSTER_H_
