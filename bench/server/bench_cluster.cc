// SPDX-License-Identifier: Apache-2.0
#include "bench_cluster.h"

namespace tickwheel::bench {

std::unique_ptr<server::PgConnection> Connect(const std::string& conninfo) {
  auto c = server::PgConnection::Connect(conninfo);
  if (!c.ok()) {
    std::fprintf(stderr, "cluster: %s\n", c.status().message().c_str());
    std::exit(1);
  }
  return std::move(*c);
}

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

// Node i's share of `total` spread over `nodes`.
std::uint64_t ShareOf(std::uint64_t total, int nodes, int i) {
  const auto n = static_cast<std::uint64_t>(nodes);
  return total / n + (static_cast<std::uint64_t>(i) < total % n ? 1 : 0);
}

}  // namespace tickwheel::bench
