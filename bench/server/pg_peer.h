// SPDX-License-Identifier: Apache-2.0
// The peer a user would otherwise run: a PostgreSQL table of timers, created
// with INSERTs and fired by workers polling it with FOR UPDATE SKIP LOCKED
// (the db-scheduler / River / Sidekiq-on-Postgres pattern).
#ifndef TICKWHEEL_BENCH_SERVER_PG_PEER_H_
#define TICKWHEEL_BENCH_SERVER_PG_PEER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace tickwheel::bench {

struct PgTimer {
  std::string id;
  std::int64_t fire_at_ms;
  std::string url;
  std::string payload;  // JSON
};

// Thread safety: each method opens its own connections.
class PgPeer {
 public:
  explicit PgPeer(std::string conninfo);

  // Creates the table (dropping an old one). Returns false with a message.
  bool Reset(std::string* error);

  // Inserts `timers` in multi-row INSERTs of `batch` rows, spread over
  // `connections` connections (threads). Each statement is its own
  // transaction, committed durably (synchronous_commit on). Returns rows/s.
  double InsertBatches(const std::vector<PgTimer>& timers, int batch, int connections);

  // Single-row INSERTs from `connections` threads for `seconds` or `total`
  // rows. Returns rows/s.
  double InsertSingles(int connections, std::uint64_t total, double seconds,
                       const std::string& url, std::int64_t fire_at_ms);

  // Starts `workers` threads that poll for due timers (claim up to `claim`
  // with SKIP LOCKED, POST each to its url over keep-alive, mark them
  // delivered), sleeping `idle_poll_ms` when nothing is due.
  void StartWorkers(int workers, int claim, int idle_poll_ms);
  void StopWorkers();
  std::uint64_t delivered() const { return delivered_.load(); }

 private:
  void Worker(int claim, int idle_poll_ms);

  std::string conninfo_;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> delivered_{0};
  std::vector<std::thread> workers_;
};

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_BENCH_SERVER_PG_PEER_H_
