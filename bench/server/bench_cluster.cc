// SPDX-License-Identifier: Apache-2.0
#include "bench_cluster.h"

#include <chrono>
#include <cstdio>
#include <map>
#include <thread>

#include "store/postgres_timer_store.h"

namespace tickwheel::bench {
namespace {

namespace json = boost::json;
using server::PgConnection;
using testing::ServerProcess;

std::unique_ptr<PgConnection> Connect(const std::string& conninfo) {
  auto c = PgConnection::Connect(conninfo);
  if (!c.ok()) {
    std::fprintf(stderr, "cluster: %s\n", c.status().message().c_str());
    std::exit(1);
  }
  return std::move(*c);
}

}  // namespace

BenchCluster::BenchCluster(const std::string& binary, const std::string& pg, int shards,
                           const std::string& name, int n, int lease_ms,
                           const std::vector<std::string>& extra)
    : admin_(Connect(pg)), db_("tickwheel_bench_" + name), shards_(shards) {
  (void)admin_->Exec("DROP DATABASE IF EXISTS " + db_ + " WITH (FORCE)");
  if (auto r = admin_->Exec("CREATE DATABASE " + db_); !r.ok()) {
    std::fprintf(stderr, "cluster: %s\n", r.status().message().c_str());
    std::exit(1);
  }
  conninfo_ = pg + " dbname=" + db_;
  for (int i = 0; i < n; ++i) {
    std::vector<std::string> args{"--postgres", conninfo_, "--node-id",
                                  "node" + std::to_string(i), "--shards",
                                  std::to_string(shards), "--lease",
                                  std::to_string(lease_ms) + "ms"};
    args.insert(args.end(), extra.begin(), extra.end());
    nodes_.push_back(std::make_unique<ServerProcess>(
        binary, dir_.path() + "/node" + std::to_string(i), std::move(args)));
  }
  for (auto& node : nodes_) {
    if (!node->Start()) std::exit(1);
  }
  if (!Settle()) {
    std::fprintf(stderr, "cluster: the shards were not shared out within 60 s\n");
    std::exit(1);
  }
}

BenchCluster::~BenchCluster() {
  for (auto& node : nodes_) {
    if (node->running()) node->Terminate(30);
  }
  query_.reset();
  (void)admin_->Exec("DROP DATABASE IF EXISTS " + db_ + " WITH (FORCE)");
}

std::vector<int> BenchCluster::Owners() {
  if (!query_) query_ = Connect(conninfo_);
  std::vector<int> owners(static_cast<std::size_t>(shards_), -1);
  auto r = query_->Exec(
      "SELECT shard, owner FROM tickwheel_shard_leases "
      "WHERE owner IS NOT NULL AND expires_at > now()");
  if (!r.ok()) return owners;
  for (int row = 0; row < r->rows(); ++row) {
    const std::string owner(r->Text(row, 1));  // "nodeK"
    owners[static_cast<std::size_t>(r->Int(row, 0))] = std::stoi(owner.substr(4));
  }
  return owners;
}

double BenchCluster::Commits() {
  if (!query_) query_ = Connect(conninfo_);
  auto r = query_->Exec(
      "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()");
  return r.ok() && r->rows() == 1 ? static_cast<double>(r->Int(0, 0)) : 0;
}

double BenchCluster::DatabaseBytes() {
  if (!query_) query_ = Connect(conninfo_);
  auto r = query_->Exec("SELECT pg_database_size(current_database())");
  return r.ok() && r->rows() == 1 ? static_cast<double>(r->Int(0, 0)) : 0;
}

int BenchCluster::OwnerOf(const std::vector<int>& owners, const std::string& id) const {
  return owners[static_cast<std::size_t>(server::ShardOfId(id, shards_))];
}

std::vector<CpuMeter> BenchCluster::Meters() {
  std::vector<CpuMeter> m;
  for (auto& node : nodes_) m.emplace_back(node->pid());
  return m;
}

json::object BenchCluster::Stop(const std::vector<CpuMeter>& meters) {
  json::object total = meters.front().Stop();
  double server = 0;
  for (const CpuMeter& m : meters) server += m.Stop().at("server_cpu_pct").as_double();
  total["server_cpu_pct"] = server;
  return total;
}

bool BenchCluster::Settle() {
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

std::uint64_t ShareOf(std::uint64_t total, int nodes, int i) {
  const auto n = static_cast<std::uint64_t>(nodes);
  return total / n + (static_cast<std::uint64_t>(i) < total % n ? 1 : 0);
}

}  // namespace tickwheel::bench
