// SPDX-License-Identifier: Apache-2.0
#include "create_phases.h"

#include <fcntl.h>
#include <libpq-fe.h>
#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/write_batch.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/asio.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <thread>

#include "bench_util.h"
#include "cli/blocking_http_client.h"
#include "support/server_process.h"

namespace tickwheel::bench {
namespace {

namespace asio = boost::asio;
namespace json = boost::json;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using testing::ServerProcess;

// CPU seconds of every process named postgres (the server and its
// backends): the peer's own CPU.
double PostgresCpuSeconds() {
  double total = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    std::string comm;
    std::getline(std::ifstream(e.path() / "comm"), comm);
    if (comm.rfind("postgres", 0) == 0) total += ProcCpuSeconds(std::stoi(name));
  }
  return total;
}

double Median(std::vector<double> x) {
  if (x.empty()) return 0;
  std::sort(x.begin(), x.end());
  return x[x.size() / 2];
}

// p-th percentile (0..100) of latencies in microseconds.
double Percentile(std::vector<float>& x, double p) {
  if (x.empty()) return 0;
  const std::size_t k =
      std::min(x.size() - 1, static_cast<std::size_t>(p / 100.0 * static_cast<double>(x.size())));
  std::nth_element(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(k), x.end());
  return x[k];
}

float MicrosSince(Clock::time_point t) {
  return std::chrono::duration<float, std::micro>(Clock::now() - t).count();
}

// --- fdatasync on the data directory's filesystem ---

// The time of one 512-byte write (about one create's WAL record) +
// fdatasync, two ways: appended to a growing file (the sync also writes the
// file's new size: what a fresh WAL costs) and overwriting a preallocated,
// already synced file (data only: what a recycled WAL would cost, the
// floor). Median of `n` each.
json::object MeasureFdatasync(const std::string& dir, int n) {
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/fdatasync_probe";
  std::vector<char> block(512, 'x');
  auto probe = [&](bool preallocated) {
    ::unlink(path.c_str());
    const int fd = ::open(path.c_str(), O_CREAT | O_RDWR | O_TRUNC, 0644);
    if (fd < 0) return 0.0;
    if (preallocated) {
      for (int i = 0; i < n; ++i) {
        if (::write(fd, block.data(), block.size()) < 0) break;
      }
      ::fsync(fd);
      ::lseek(fd, 0, SEEK_SET);
    }
    std::vector<double> us;
    for (int i = 0; i < n; ++i) {
      const auto t = Clock::now();
      if (::write(fd, block.data(), block.size()) < 0 || ::fdatasync(fd) != 0) break;
      us.push_back(MicrosSince(t));
    }
    ::close(fd);
    ::unlink(path.c_str());
    return Median(us);
  };
  json::object o;
  o["append_us"] = probe(false);
  o["overwrite_us"] = probe(true);
  return o;
}

// --- A lean HTTP/1.1 load generator (keep-alive, one thread) ---

struct HttpLoad {
  std::uint64_t ok = 0, failed = 0;
  double seconds = 0;
  std::vector<float> latency_us;
};

using BodyFn = std::function<void(std::uint64_t, std::string&)>;

struct LoadState {
  std::uint64_t next = 0, total = 0;
  Clock::time_point end;
  HttpLoad result;
};

// Finds the end of the response head in `buf` and its status and
// Content-Length; false if the head is not complete yet.
bool ParseHead(std::string_view buf, std::size_t& body_at, int& status, std::size_t& length) {
  const std::size_t end = buf.find("\r\n\r\n");
  if (end == std::string_view::npos) return false;
  body_at = end + 4;
  status = buf.size() > 12 ? std::atoi(std::string(buf.substr(9, 3)).c_str()) : 0;
  length = 0;
  std::string head(buf.substr(0, end));
  for (char& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const std::size_t cl = head.find("\r\ncontent-length:");
  if (cl != std::string::npos) length = std::strtoull(head.c_str() + cl + 17, nullptr, 10);
  return true;
}

asio::awaitable<void> HttpConnection(tcp::endpoint at, LoadState& st, std::string path,
                                     const BodyFn& body, int expected) {
  auto ex = co_await asio::this_coro::executor;
  tcp::socket s(ex);
  boost::system::error_code ec;
  co_await s.async_connect(at, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) {
    ++st.result.failed;
    co_return;
  }
  s.set_option(tcp::no_delay(true));
  std::string req, payload, buf(64 * 1024, '\0');
  std::size_t have = 0;
  while (st.next < st.total && Clock::now() < st.end) {
    const std::uint64_t i = st.next++;
    payload.clear();
    body(i, payload);
    req.clear();
    req += "POST " + path +
           " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ";
    req += std::to_string(payload.size());
    req += "\r\n\r\n";
    req += payload;
    const auto t0 = Clock::now();
    co_await asio::async_write(s, asio::buffer(req), asio::redirect_error(asio::use_awaitable, ec));
    if (ec) break;
    std::size_t body_at = 0, length = 0;
    int status = 0;
    for (;;) {
      if (ParseHead(std::string_view(buf.data(), have), body_at, status, length) &&
          have >= body_at + length) {
        break;
      }
      if (have == buf.size()) buf.resize(buf.size() * 2);
      const std::size_t n = co_await s.async_read_some(
          asio::buffer(buf.data() + have, buf.size() - have),
          asio::redirect_error(asio::use_awaitable, ec));
      if (ec) break;
      have += n;
    }
    if (ec) break;
    st.result.latency_us.push_back(MicrosSince(t0));
    const std::size_t used = body_at + length;
    std::memmove(buf.data(), buf.data() + used, have - used);
    have -= used;
    if (status == expected) {
      ++st.result.ok;
    } else {
      ++st.result.failed;
    }
  }
  if (ec) ++st.result.failed;
}

HttpLoad RunHttpLoad(int port, int connections, std::uint64_t total, double seconds,
                     const std::string& path, const BodyFn& body, int expected) {
  asio::io_context ioc(1);
  LoadState st;
  st.total = total;
  const auto start = Clock::now();
  st.end = start + std::chrono::microseconds(static_cast<std::int64_t>(seconds * 1e6));
  const tcp::endpoint at(asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port));
  for (int c = 0; c < connections; ++c) {
    asio::co_spawn(ioc, HttpConnection(at, st, path, body, expected), asio::detached);
  }
  ioc.run();
  st.result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return std::move(st.result);
}

void AppendTimer(std::string& out, std::string_view prefix, std::uint64_t i, std::int64_t fire_at) {
  out += "{\"id\":\"";
  out += prefix;
  out += std::to_string(i);
  out += "\",\"fire_at_ms\":";
  out += std::to_string(fire_at);
  out += ",\"target\":{\"url\":\"http://127.0.0.1:9/x\"},\"payload\":{\"n\":1}}";
}

double WalSyncs(const ServerProcess& server) {
  server::BlockingHttpClient client(server.address());
  const std::string m = client.Call("GET", "/metrics").body;
  const std::string name = "\ntickwheel_store_wal_syncs_total ";
  const std::size_t at = m.find(name);
  return at == std::string::npos ? 0.0 : std::stod(m.substr(at + name.size()));
}

// One measurement: a figure for one system at one concurrency.
json::object Figures(HttpLoad& l, double cpu_seconds, double client_cpu_seconds) {
  json::object r;
  r["creates"] = l.ok;
  r["failed"] = l.failed;
  r["per_s"] = static_cast<double>(l.ok) / l.seconds;
  r["p50_us"] = Percentile(l.latency_us, 50);
  r["p99_us"] = Percentile(l.latency_us, 99);
  r["cpu_us_per_create"] = l.ok ? cpu_seconds * 1e6 / static_cast<double>(l.ok) : 0.0;
  r["cpu_pct"] = 100 * cpu_seconds / l.seconds;
  r["client_cpu_pct"] = 100 * client_cpu_seconds / l.seconds;
  return r;
}

json::object TickwheelSingles(const CreatePhaseOptions& o, const std::string& data, int clients) {
  ServerProcess server(o.binary, data);
  if (!server.Start()) std::exit(1);
  const std::int64_t far = NowMs() + 3'600'000;
  const double syncs = WalSyncs(server);
  const double cpu = ProcCpuSeconds(server.pid()), self = SelfCpuSeconds();
  HttpLoad l = RunHttpLoad(server.port(), clients, UINT64_MAX, o.seconds, "/v1/timers",
                           [&](std::uint64_t i, std::string& out) { AppendTimer(out, "s", i, far); },
                           201);
  json::object r =
      Figures(l, ProcCpuSeconds(server.pid()) - cpu, SelfCpuSeconds() - self);
  r["creates_per_fsync"] = static_cast<double>(l.ok) / std::max(1.0, WalSyncs(server) - syncs);
  server.Terminate();
  std::filesystem::remove_all(data);
  return r;
}

// A record of the size the server stores for the bench's timer, under the
// server's key layout: the record key and the due-index key.
json::object RocksDbSingles(const CreatePhaseOptions& o, const std::string& data, int clients) {
  rocksdb::Options options;
  options.create_if_missing = true;
  options.IncreaseParallelism(2);
  options.enable_write_thread_adaptive_yield = false;  // as the server: 2 cores
  rocksdb::DB* raw = nullptr;
  if (!rocksdb::DB::Open(options, data, &raw).ok()) std::exit(1);
  std::unique_ptr<rocksdb::DB> db(raw);
  const std::string value(130, 'v');
  const std::string due = "d" + std::string(8, '\x01');  // a due-index key: 'd', time, id
  std::atomic<std::uint64_t> next{0};
  std::vector<std::vector<float>> latencies(static_cast<std::size_t>(clients));
  const auto start = Clock::now();
  const auto end = start + std::chrono::microseconds(static_cast<std::int64_t>(o.seconds * 1e6));
  const double self = SelfCpuSeconds();
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      rocksdb::WriteOptions wo;
      wo.sync = true;
      while (Clock::now() < end) {
        const std::string id = "s" + std::to_string(next++);
        rocksdb::WriteBatch batch;
        batch.Put(due + id, "");
        batch.Put("r" + id, value);
        const auto t = Clock::now();
        if (!db->Write(wo, &batch).ok()) std::exit(1);
        latencies[static_cast<std::size_t>(c)].push_back(MicrosSince(t));
      }
    });
  }
  for (auto& t : threads) t.join();
  HttpLoad l;
  l.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  for (auto& v : latencies) l.latency_us.insert(l.latency_us.end(), v.begin(), v.end());
  l.ok = l.latency_us.size();
  const double cpu = SelfCpuSeconds() - self;
  db.reset();
  std::filesystem::remove_all(data);
  return Figures(l, cpu, 0);
}

struct PgConn {
  explicit PgConn(const std::string& conninfo) : c(PQconnectdb(conninfo.c_str())) {}
  ~PgConn() { PQfinish(c); }
  bool Run(const char* sql) {
    PGresult* r = PQexec(c, sql);
    const bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    if (!ok) std::fprintf(stderr, "pg: %s\n", PQerrorMessage(c));
    PQclear(r);
    return ok;
  }
  PGconn* c;
};

// Single-row INSERTs (each its own durable transaction) from `clients`
// connections, one thread each; the table is PgPeer's.
json::object PgSingles(const CreatePhaseOptions& o, int clients) {
  {
    PgConn c(o.pg);
    if (!c.Run("DROP TABLE IF EXISTS timers") ||
        !c.Run("CREATE TABLE timers (id text PRIMARY KEY, fire_at_ms bigint NOT NULL, "
               "url text NOT NULL, payload jsonb, state smallint NOT NULL DEFAULT 0, "
               "attempts int NOT NULL DEFAULT 0)") ||
        !c.Run("CREATE INDEX timers_due ON timers (fire_at_ms) WHERE state = 0") ||
        !c.Run("CHECKPOINT")) {
      std::exit(1);
    }
  }
  std::vector<std::unique_ptr<PgConn>> conns;
  for (int c = 0; c < clients; ++c) {
    conns.push_back(std::make_unique<PgConn>(o.pg));
    PGresult* r = PQprepare(conns.back()->c, "ins",
                            "INSERT INTO timers (id, fire_at_ms, url, payload) "
                            "VALUES ($1, $2, $3, $4::jsonb)",
                            4, nullptr);
    PQclear(r);
  }
  std::atomic<std::uint64_t> next{0};
  std::vector<std::vector<float>> latencies(static_cast<std::size_t>(clients));
  const std::string fire_at = std::to_string(NowMs() + 3'600'000);
  const auto start = Clock::now();
  const auto end = start + std::chrono::microseconds(static_cast<std::int64_t>(o.seconds * 1e6));
  const double pg_cpu = PostgresCpuSeconds(), self = SelfCpuSeconds();
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      PGconn* conn = conns[static_cast<std::size_t>(c)]->c;
      while (Clock::now() < end) {
        const std::string id = "s" + std::to_string(next++);
        const char* values[4] = {id.c_str(), fire_at.c_str(), "http://127.0.0.1:9/x", "{\"n\":1}"};
        const auto t = Clock::now();
        PGresult* r = PQexecPrepared(conn, "ins", 4, values, nullptr, nullptr, 0);
        const bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
        PQclear(r);
        if (!ok) break;
        latencies[static_cast<std::size_t>(c)].push_back(MicrosSince(t));
      }
    });
  }
  for (auto& t : threads) t.join();
  HttpLoad l;
  l.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const double cpu = PostgresCpuSeconds() - pg_cpu;
  for (auto& v : latencies) l.latency_us.insert(l.latency_us.end(), v.begin(), v.end());
  l.ok = l.latency_us.size();
  return Figures(l, cpu, SelfCpuSeconds() - self);
}

// Batches of 1,000 through POST /v1/timers:batch on 4 connections (bodies
// made before the clock starts).
json::object TickwheelBatches(const CreatePhaseOptions& o, const std::string& data) {
  ServerProcess server(o.binary, data, {"--max-batch", "10000"});
  if (!server.Start()) std::exit(1);
  constexpr std::uint64_t kPerBatch = 1000;
  const std::int64_t far = NowMs() + 3'600'000;
  std::vector<std::string> bodies(o.batch_total / kPerBatch);
  for (std::size_t b = 0; b < bodies.size(); ++b) {
    std::string& body = bodies[b];
    body = "{\"timers\":[";
    for (std::uint64_t i = 0; i < kPerBatch; ++i) {
      if (i) body += ',';
      AppendTimer(body, "b", b * kPerBatch + i, far);
    }
    body += "]}";
  }
  const double cpu = ProcCpuSeconds(server.pid()), self = SelfCpuSeconds();
  HttpLoad l = RunHttpLoad(server.port(), 4, bodies.size(), 3600, "/v1/timers:batch",
                           [&](std::uint64_t b, std::string& out) { out += bodies[b]; }, 201);
  const double server_cpu = ProcCpuSeconds(server.pid()) - cpu;
  json::object r;
  r["timers"] = l.ok * kPerBatch;
  r["failed_requests"] = l.failed;
  r["per_s"] = static_cast<double>(l.ok * kPerBatch) / l.seconds;
  r["cpu_us_per_create"] = server_cpu * 1e6 / static_cast<double>(std::max<std::uint64_t>(1, l.ok * kPerBatch));
  r["cpu_pct"] = 100 * server_cpu / l.seconds;
  r["client_cpu_pct"] = 100 * (SelfCpuSeconds() - self) / l.seconds;
  r["request_p50_us"] = Percentile(l.latency_us, 50);
  server.Terminate();
  std::filesystem::remove_all(data);
  return r;
}

// The same records in WriteBatches of 1,000 with sync, from 4 threads.
json::object RocksDbBatches(const CreatePhaseOptions& o, const std::string& data) {
  rocksdb::Options options;
  options.create_if_missing = true;
  options.IncreaseParallelism(2);
  options.enable_write_thread_adaptive_yield = false;
  rocksdb::DB* raw = nullptr;
  if (!rocksdb::DB::Open(options, data, &raw).ok()) std::exit(1);
  std::unique_ptr<rocksdb::DB> db(raw);
  const std::string value(130, 'v');
  const std::string due = "d" + std::string(8, '\x01');  // a due-index key: 'd', time, id
  constexpr std::uint64_t kPerBatch = 1000;
  std::atomic<std::uint64_t> next{0};
  const std::uint64_t batches = o.batch_total / kPerBatch;
  const auto start = Clock::now();
  const double self = SelfCpuSeconds();
  std::vector<std::thread> threads;
  for (int c = 0; c < 4; ++c) {
    threads.emplace_back([&] {
      rocksdb::WriteOptions wo;
      wo.sync = true;
      for (std::uint64_t b; (b = next++) < batches;) {
        rocksdb::WriteBatch batch;
        for (std::uint64_t i = b * kPerBatch; i < (b + 1) * kPerBatch; ++i) {
          const std::string id = "b" + std::to_string(i);
          batch.Put(due + id, "");
          batch.Put("r" + id, value);
        }
        if (!db->Write(wo, &batch).ok()) std::exit(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const double cpu = SelfCpuSeconds() - self;
  db.reset();
  std::filesystem::remove_all(data);
  json::object r;
  r["per_s"] = static_cast<double>(batches * kPerBatch) / seconds;
  r["cpu_us_per_create"] = cpu * 1e6 / static_cast<double>(batches * kPerBatch);
  r["cpu_pct"] = 100 * cpu / seconds;
  return r;
}

}  // namespace

json::object RunCreatePhases(const CreatePhaseOptions& o) {
  json::object out;
  out["load_average_start"] = LoadAverage();
  out["seconds"] = o.seconds;
  out["rounds"] = o.rounds;
  out["batch_total"] = o.batch_total;
  std::vector<std::string> systems = {"tickwheel", "rocksdb"};
  if (!o.pg.empty()) systems.push_back("postgres");
  if (!o.only_systems.empty()) systems = o.only_systems;
  if (std::find(systems.begin(), systems.end(), "rocksdb") == systems.end()) {
    systems.push_back("rocksdb");  // the base of the ratios
  }
  // measurements[system][clients index] = one object per round
  std::map<std::string, std::vector<std::vector<json::object>>> runs;
  std::vector<json::object> batch_runs, rocksdb_batch_runs;
  json::array fsyncs;
  int n = 0;
  for (int round = 0; round < o.rounds; ++round) {
    fsyncs.push_back(MeasureFdatasync(o.data_dir, 200));
    for (std::size_t k = 0; k < o.clients.size(); ++k) {
      const std::size_t ci = (k + static_cast<std::size_t>(round)) % o.clients.size();
      const int clients = o.clients[ci];
      // The disk's fdatasync time drifts with the machine's other work:
      // measured again next to every 1-client run, which it is the floor of.
      json::object near_fsync;
      if (clients == 1) {
        near_fsync = MeasureFdatasync(o.data_dir, 200);
        fsyncs.push_back(near_fsync);
      }
      for (std::size_t s = 0; s < systems.size(); ++s) {
        const std::string& system = systems[(s + static_cast<std::size_t>(round)) % systems.size()];
        std::fprintf(stderr, "creates: %s, %d client(s) (round %d of %d)\n", system.c_str(),
                     clients, round + 1, o.rounds);
        const std::string data = o.data_dir + "/creates-" + std::to_string(++n);
        json::object r = system == "tickwheel" ? TickwheelSingles(o, data, clients)
                         : system == "rocksdb" ? RocksDbSingles(o, data, clients)
                                               : PgSingles(o, clients);
        r["load_average"] = LoadAverage();
        if (clients == 1) r["fdatasync"] = near_fsync;
        auto& per_system = runs[system];
        per_system.resize(o.clients.size());
        per_system[ci].push_back(std::move(r));
      }
    }
    if (!o.batches) continue;
    std::fprintf(stderr, "creates: batches (round %d of %d)\n", round + 1, o.rounds);
    const std::string data = o.data_dir + "/creates-" + std::to_string(++n);
    if (round % 2 == 0) {
      batch_runs.push_back(TickwheelBatches(o, data));
      rocksdb_batch_runs.push_back(RocksDbBatches(o, data + "r"));
    } else {
      rocksdb_batch_runs.push_back(RocksDbBatches(o, data + "r"));
      batch_runs.push_back(TickwheelBatches(o, data));
    }
  }
  // Per (system, clients): the median round of each figure, every round's
  // throughput, and the ratios to RocksDB round by round.
  json::array singles;
  for (const std::string& system : systems) {
    for (std::size_t ci = 0; ci < o.clients.size(); ++ci) {
      const std::vector<json::object>& rs = runs[system][ci];
      const std::vector<json::object>& base = runs["rocksdb"][ci];
      auto median_of = [&](const char* key) {
        std::vector<double> v;
        for (const json::object& r : rs) v.push_back(r.at(key).to_number<double>());
        return Median(v);
      };
      json::object m;
      m["system"] = system;
      m["clients"] = o.clients[ci];
      for (const char* key : {"per_s", "p50_us", "p99_us", "cpu_us_per_create", "cpu_pct",
                              "client_cpu_pct"}) {
        m[key] = median_of(key);
      }
      if (system == "tickwheel") m["creates_per_fsync"] = median_of("creates_per_fsync");
      if (o.clients[ci] == 1) {
        // p50 over the fdatasync measured just before it, round by round.
        std::vector<double> over, append;
        for (const json::object& r : rs) {
          const double p50 = r.at("p50_us").to_number<double>();
          over.push_back(p50 / r.at("fdatasync").at("overwrite_us").as_double());
          append.push_back(p50 / r.at("fdatasync").at("append_us").as_double());
        }
        m["p50_vs_fdatasync_overwrite"] = Median(over);
        m["p50_vs_fdatasync_append"] = Median(append);
      }
      std::vector<double> rate_ratio, p50_ratio;
      json::array rates;
      for (std::size_t i = 0; i < rs.size(); ++i) {
        rates.push_back(rs[i].at("per_s"));
        rate_ratio.push_back(rs[i].at("per_s").to_number<double>() /
                             base[i].at("per_s").to_number<double>());
        p50_ratio.push_back(rs[i].at("p50_us").to_number<double>() /
                            base[i].at("p50_us").to_number<double>());
      }
      m["per_s_rounds"] = std::move(rates);
      m["per_s_vs_rocksdb"] = Median(rate_ratio);
      m["p50_vs_rocksdb"] = Median(p50_ratio);
      singles.push_back(std::move(m));
    }
  }
  auto batch_median = [](const std::vector<json::object>& rs) {
    std::vector<json::object> sorted = rs;
    std::sort(sorted.begin(), sorted.end(), [](const json::object& a, const json::object& b) {
      return a.at("per_s").as_double() < b.at("per_s").as_double();
    });
    json::object m = sorted[sorted.size() / 2];
    std::vector<double> cpu;
    json::array rates;
    for (const json::object& r : rs) {
      cpu.push_back(r.at("cpu_us_per_create").as_double());
      rates.push_back(r.at("per_s"));
    }
    m["cpu_us_per_create"] = Median(cpu);
    m["per_s_rounds"] = std::move(rates);
    return m;
  };
  std::vector<double> fdatasync_append, fdatasync_overwrite;
  for (const json::value& f : fsyncs) {
    fdatasync_append.push_back(f.at("append_us").as_double());
    fdatasync_overwrite.push_back(f.at("overwrite_us").as_double());
  }
  json::object fdatasync;
  fdatasync["append_us"] = Median(fdatasync_append);
  fdatasync["overwrite_us"] = Median(fdatasync_overwrite);
  fdatasync["rounds"] = std::move(fsyncs);
  out["fdatasync"] = std::move(fdatasync);
  out["singles"] = std::move(singles);
  if (o.batches) {
    out["batch"] = batch_median(batch_runs);
    out["rocksdb_batch"] = batch_median(rocksdb_batch_runs);
  }
  out["load_average_end"] = LoadAverage();
  return out;
}

}  // namespace tickwheel::bench
