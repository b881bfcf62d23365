// SPDX-License-Identifier: Apache-2.0
#include "pg_peer.h"

#include <libpq-fe.h>

#include <chrono>
#include <cstdio>
#include <mutex>

#include "bench_util.h"
#include "cli/blocking_http_client.h"

namespace tickwheel::bench {

namespace {

struct Conn {
  explicit Conn(const std::string& conninfo) : c(PQconnectdb(conninfo.c_str())) {}
  ~Conn() { PQfinish(c); }
  bool ok() const { return PQstatus(c) == CONNECTION_OK; }
  // Runs `sql`; returns the result (caller PQclears) or null after printing.
  PGresult* Exec(const std::string& sql) {
    PGresult* r = PQexec(c, sql.c_str());
    const auto s = PQresultStatus(r);
    if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) {
      std::fprintf(stderr, "pg: %s\n", PQerrorMessage(c));
      PQclear(r);
      return nullptr;
    }
    return r;
  }
  bool Run(const std::string& sql) {
    PGresult* r = Exec(sql);
    if (!r) return false;
    PQclear(r);
    return true;
  }
  PGconn* c;
};

std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char ch : s) {
    if (ch == '\'') out += '\'';
    out += ch;
  }
  return out + "'";
}

std::string Row(const PgTimer& t) {
  return "(" + Quote(t.id) + "," + std::to_string(t.fire_at_ms) + "," + Quote(t.url) + "," +
         Quote(t.payload) + "::jsonb)";
}

}  // namespace

PgPeer::PgPeer(std::string conninfo) : conninfo_(std::move(conninfo)) {}

bool PgPeer::Reset(std::string* error) {
  Conn c(conninfo_);
  if (!c.ok()) {
    *error = PQerrorMessage(c.c);
    return false;
  }
  // state: 0 pending, 1 delivering, 2 delivered. The partial index is what
  // the pollers scan.
  const bool ok = c.Run("DROP TABLE IF EXISTS timers") &&
                  c.Run("CREATE TABLE timers (id text PRIMARY KEY, fire_at_ms bigint NOT NULL, "
                        "url text NOT NULL, payload jsonb, state smallint NOT NULL DEFAULT 0, "
                        "attempts int NOT NULL DEFAULT 0)") &&
                  c.Run("CREATE INDEX timers_due ON timers (fire_at_ms) WHERE state = 0");
  if (!ok) *error = PQerrorMessage(c.c);
  return ok;
}

double PgPeer::InsertBatches(const std::vector<PgTimer>& timers, int batch, int connections) {
  std::atomic<std::size_t> next{0};
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < connections; ++t) {
    threads.emplace_back([&] {
      Conn c(conninfo_);
      for (;;) {
        const std::size_t from = next.fetch_add(static_cast<std::size_t>(batch));
        if (from >= timers.size()) break;
        const std::size_t to = std::min(timers.size(), from + static_cast<std::size_t>(batch));
        std::string sql = "INSERT INTO timers (id, fire_at_ms, url, payload) VALUES ";
        for (std::size_t i = from; i < to; ++i) sql += (i > from ? "," : "") + Row(timers[i]);
        c.Run(sql);
      }
    });
  }
  for (auto& t : threads) t.join();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return static_cast<double>(timers.size()) / s;
}

double PgPeer::InsertSingles(int connections, std::uint64_t total, double seconds,
                             const std::string& url, std::int64_t fire_at_ms) {
  std::atomic<std::uint64_t> next{0};
  std::atomic<std::uint64_t> done{0};
  const auto start = std::chrono::steady_clock::now();
  const auto end = start + std::chrono::duration<double>(seconds);
  std::vector<std::thread> threads;
  for (int t = 0; t < connections; ++t) {
    threads.emplace_back([&] {
      Conn c(conninfo_);
      while (std::chrono::steady_clock::now() < end) {
        const std::uint64_t i = next.fetch_add(1);
        if (i >= total) break;
        PgTimer timer{"s" + std::to_string(i), fire_at_ms, url, "{\"n\":1}"};
        if (c.Run("INSERT INTO timers (id, fire_at_ms, url, payload) VALUES " + Row(timer))) {
          done.fetch_add(1);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return static_cast<double>(done.load()) / s;
}

void PgPeer::StartWorkers(int workers, int claim, int idle_poll_ms) {
  stop_ = false;
  for (int i = 0; i < workers; ++i) {
    workers_.emplace_back([this, claim, idle_poll_ms] { Worker(claim, idle_poll_ms); });
  }
}

void PgPeer::StopWorkers() {
  stop_ = true;
  for (auto& t : workers_) t.join();
  workers_.clear();
}

void PgPeer::Worker(int claim, int idle_poll_ms) {
  Conn c(conninfo_);
  std::unique_ptr<server::BlockingHttpClient> http;
  std::string http_server;
  while (!stop_.load()) {
    PGresult* r = c.Exec(
        "UPDATE timers SET state = 1, attempts = attempts + 1 WHERE id IN ("
        " SELECT id FROM timers WHERE state = 0 AND fire_at_ms <= " + std::to_string(NowMs()) +
        " ORDER BY fire_at_ms LIMIT " + std::to_string(claim) +
        " FOR UPDATE SKIP LOCKED) RETURNING id, fire_at_ms, url, payload, attempts");
    const int rows = r ? PQntuples(r) : 0;
    if (rows == 0) {
      if (r) PQclear(r);
      std::this_thread::sleep_for(std::chrono::milliseconds(idle_poll_ms));
      continue;
    }
    std::string done = "UPDATE timers SET state = 2 WHERE id IN (";
    for (int i = 0; i < rows; ++i) {
      const std::string id = PQgetvalue(r, i, 0);
      const std::string url = PQgetvalue(r, i, 2);
      // http://host:port/path
      const std::size_t host_start = url.find("://") + 3;
      const std::size_t path_start = url.find('/', host_start);
      const std::string host = url.substr(host_start, path_start - host_start);
      if (!http || host != http_server) {
        http = std::make_unique<server::BlockingHttpClient>(host);
        http_server = host;
      }
      const std::string body = std::string("{\"id\":\"") + id + "\",\"payload\":" +
                               PQgetvalue(r, i, 3) + ",\"fire_at_ms\":" + PQgetvalue(r, i, 1) +
                               ",\"attempt\":" + PQgetvalue(r, i, 4) + "}";
      server::HttpCallResult res = http->Call("POST", url.substr(path_start), body);
      if (res.status >= 200 && res.status < 300) delivered_.fetch_add(1);
      done += (i ? "," : "") + Quote(id);
    }
    PQclear(r);
    c.Run(done + ")");
  }
}

}  // namespace tickwheel::bench
