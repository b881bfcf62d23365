// SPDX-License-Identifier: Apache-2.0
// A cluster of `tickwheel serve --postgres` nodes on a database of their
// own, for make bench-server's cluster and flow phases.
#ifndef TICKWHEEL_BENCH_SERVER_BENCH_CLUSTER_H_
#define TICKWHEEL_BENCH_SERVER_BENCH_CLUSTER_H_

#include <boost/json.hpp>
#include <memory>
#include <string>
#include <vector>

#include "bench_util.h"
#include "store/pg_connection.h"
#include "support/server_process.h"

namespace tickwheel::bench {

// `n` nodes of `tickwheel serve --postgres` (`binary`) on a database of
// their own on the PostgreSQL at `pg` (a key=value conninfo; the database is
// created here and dropped by the destructor), named node0, node1, ...,
// with `extra` arguments each; the constructor returns once the shards are
// shared out (and exits the process if they are not within a minute).
//
// Thread safety: node(i) and OwnerOf from any thread; the rest from the
// thread that made it (one connection for its queries).
class BenchCluster {
 public:
  BenchCluster(const std::string& binary, const std::string& pg, int shards,
               const std::string& name, int n, int lease_ms = 10'000,
               const std::vector<std::string>& extra = {});
  ~BenchCluster();

  int size() const { return static_cast<int>(nodes_.size()); }
  testing::ServerProcess& node(int i) {
    return *nodes_[static_cast<std::size_t>(i)];
  }

  // shard -> index of the node holding an unexpired lease on it (-1: none).
  std::vector<int> Owners();
  // Transactions committed in the cluster's database so far (PostgreSQL's
  // statistics, which backends report within about a second).
  double Commits();
  // The size of the cluster's database (pg_database_size).
  double DatabaseBytes();
  int OwnerOf(const std::vector<int>& owners, const std::string& id) const;

  // A CPU meter per node, started now; Stop(meters) gives the first one's
  // figures with server_cpu_pct summed over the nodes (all still running).
  std::vector<CpuMeter> Meters();
  static boost::json::object Stop(const std::vector<CpuMeter>& meters);

 private:
  // Waits until every shard is held, each node holding at most its fair
  // share (so none is still giving shards back).
  bool Settle();

  std::unique_ptr<server::PgConnection> admin_;
  std::unique_ptr<server::PgConnection> query_;
  std::string db_, conninfo_;
  int shards_;
  testing::TempDir dir_;
  std::vector<std::unique_ptr<testing::ServerProcess>> nodes_;
};

// Node i's share of `total` spread over `nodes`.
std::uint64_t ShareOf(std::uint64_t total, int nodes, int i);

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_BENCH_SERVER_BENCH_CLUSTER_H_
