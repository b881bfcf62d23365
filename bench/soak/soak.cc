// SPDX-License-Identifier: Apache-2.0
// soak: `tickwheel serve` under continuous load and chaos for a while, then
// the verdict (make soak; docs/reliability.md).
//
// Load: several client threads create timers (singles and batches), and
// reschedule, cancel and read some of them, at a steady rate of timers/s,
// through a random node. Receivers: in-process HTTP receivers, one per
// behaviour, chosen by the timer's path: mostly 200; "flaky" 500/503 with
// Retry-After half the time; "slow" up to 1.5 s, a quarter of the time past
// the delivery timeout; "reset" and "stall" (never answering) on the first
// attempt; "dead" always 500 (dead letters by design).
// Chaos: every 30-60 s a SIGKILL of a random node and a restart 0-3 s
// later; in cluster mode (3 nodes on a throw-away PostgreSQL 15) half of
// the events are a SIGSTOP past the node's lease and a SIGCONT instead.
// Sampled every second: each node's RSS and open files, and its counters.
// At the end: every acknowledged timer due is waited for, then judged
// (ledger.h says what counts), and a JSON report is written.
//
//   soak --binary build/tickwheel --mode embedded --duration 10m --out r.json
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cli/blocking_http_client.h"
#include "ledger.h"
#include "support/postgres_server.h"
#include "support/process_stats.h"
#include "support/server_process.h"
#include "support/webhook_receiver.h"

namespace tickwheel::soak {
namespace {

namespace json = boost::json;
using server::BlockingHttpClient;
using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::Delivery;
using testing::Reply;

constexpr int kLeaseMs = 2000;           // cluster mode
constexpr int kDeliveryTimeoutMs = 2000;
constexpr int kMaxDelayMs = 20000;       // timers are due within 20 s

std::int64_t WallMs() {
  return std::chrono::duration_cast<milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct Options {
  std::string binary = "build/tickwheel";
  std::string mode = "embedded";  // or "cluster"
  std::string out = "bench/soak/results/soak.json";
  int duration_s = 600;
  double rate = 0;  // timers created per second, all threads together (0: 500, cluster 300)
  int threads = 4;
  int nodes = 1;
  unsigned seed = 1;
  int chaos_min_s = 30;
  int chaos_max_s = 60;
};

// "10m", "90s", "600": seconds.
int ParseDuration(const std::string& text) {
  const int n = std::stoi(text);
  if (text.back() == 'm') return n * 60;
  if (text.back() == 'h') return n * 3600;
  return n;
}

std::string ReadLoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string one;
  in >> one;
  return one;
}

// The value of an unlabelled metric in Prometheus text; -1 if absent.
double MetricOf(const std::string& text, const std::string& name) {
  const std::string key = "\n" + name + " ";
  const std::size_t at = text.find(key);
  return at == std::string::npos ? -1 : std::stod(text.substr(at + key.size()));
}

const std::vector<std::string> kCounters = {
    "tickwheel_duplicates_after_recovery_total", "tickwheel_attempts_unanswered_total",
    "tickwheel_timers_fired_total",              "tickwheel_timers_delivered_total",
    "tickwheel_timers_failed_total",             "tickwheel_timers_retried_total",
    "tickwheel_fenced_writes_total",             "tickwheel_store_write_errors_total",
    "tickwheel_timers_swept_total",              "tickwheel_cluster_leases_lost_total"};

// The nodes and, in cluster mode, their PostgreSQL. Only the chaos thread
// (and main, before and after it) starts, kills, pauses or stops a node;
// the sampler reads pids_ and paused_.
class Fleet {
 public:
  explicit Fleet(const Options& o) {
    if (o.mode == "cluster") {
      postgres_ = std::make_unique<testing::PostgresServer>();
      if (!postgres_->ok()) {
        std::fprintf(stderr, "PostgreSQL did not start:\n%s\n", postgres_->log().c_str());
        std::exit(1);
      }
    }
    for (int i = 0; i < o.nodes; ++i) {
      std::vector<std::string> args = {
          "--backoff", "200ms", "--max-attempts", "8", "--delivery-timeout",
          std::to_string(kDeliveryTimeoutMs) + "ms", "--drain-timeout", "10s"};
      if (postgres_) {
        const std::vector<std::string> cluster = {
            "--postgres", postgres_->url(), "--node-id", "node" + std::to_string(i),
            "--shards",   "32",             "--lease",   std::to_string(kLeaseMs) + "ms"};
        args.insert(args.end(), cluster.begin(), cluster.end());
      }
      ports_.push_back(testing::FreePort());
      nodes_.push_back(std::make_unique<testing::ServerProcess>(
          o.binary, dir_.path() + "/node" + std::to_string(i), args));
    }
    pids_ = std::vector<std::atomic<pid_t>>(nodes_.size());
    paused_ = std::vector<std::atomic<bool>>(nodes_.size());
    incarnation_ = std::vector<std::atomic<int>>(nodes_.size());
  }

  int size() const { return static_cast<int>(nodes_.size()); }
  std::string address(int i) const { return "127.0.0.1:" + std::to_string(ports_[i]); }
  pid_t pid(int i) const { return pids_[i].load(); }
  bool paused(int i) const { return paused_[i].load(); }
  int incarnation(int i) const { return incarnation_[i].load(); }
  testing::ServerProcess& node(int i) { return *nodes_[i]; }
  std::string data_dir(int i) const { return dir_.path() + "/node" + std::to_string(i); }

  bool Start(int i) {
    for (int tries = 0; tries < 3; ++tries) {
      if (nodes_[i]->Start(ports_[i])) {
        incarnation_[i].fetch_add(1);
        pids_[i].store(nodes_[i]->pid());
        return true;
      }
    }
    return false;
  }
  void Kill(int i) {
    pids_[i].store(0);
    nodes_[i]->Kill();
  }
  void Pause(int i) {
    paused_[i].store(true);
    nodes_[i]->Signal(SIGSTOP);
  }
  void Resume(int i) {
    nodes_[i]->Signal(SIGCONT);
    paused_[i].store(false);
  }

 private:
  testing::TempDir dir_;
  std::unique_ptr<testing::PostgresServer> postgres_;
  std::vector<int> ports_;
  std::vector<std::unique_ptr<testing::ServerProcess>> nodes_;
  std::vector<std::atomic<pid_t>> pids_;
  std::vector<std::atomic<bool>> paused_;
  std::vector<std::atomic<int>> incarnation_;
};

// Receiver behaviours, by the path of the timer's URL.
struct Behaviour {
  const char* path;
  double weight;
};
const std::vector<Behaviour> kBehaviours = {{"/ok", 0.80},   {"/flaky", 0.08}, {"/slow", 0.05},
                                            {"/reset", 0.03}, {"/stall", 0.03}, {"/dead", 0.01}};

// A number in [0, 1) fixed by the delivery (its id and attempt), so that a
// run's answers do not depend on thread timing.
double Dice(const Delivery& d, int salt) {
  std::uint64_t h = std::hash<std::string>()(d.id) ^ (static_cast<std::uint64_t>(d.attempt) << 32) ^
                    static_cast<std::uint64_t>(salt) * 0x9e3779b97f4a7c15ULL;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  return static_cast<double>(h >> 11) / static_cast<double>(1ULL << 53);
}

// One keep-alive connection to a node, and whether a failed call on it can
// have reached the server. BlockingHttpClient closes its connection after a
// failure and resends once when a kept-alive connection turns out closed; so
// "cannot connect" right after a failure means nothing was sent, while
// after a success it may follow a request the server read before it died.
struct Client {
  std::unique_ptr<BlockingHttpClient> http;
  bool closed = true;

  struct Answer {
    server::HttpCallResult r;
    bool not_sent = false;  // status 0, and the request never left
  };
  Answer Call(std::string_view method, std::string_view target, std::string_view body = {}) {
    Answer a{http->Call(method, target, body)};
    a.not_sent = a.r.status == 0 && closed && a.r.error.rfind("cannot connect", 0) == 0;
    closed = a.r.status == 0;
    return a;
  }
};

struct Counts {
  std::atomic<std::uint64_t> requests{0}, ok{0};
};

class Soak {
 public:
  // One receiver (its own port) per behaviour, as different services would
  // be: the server's connection limit is per host and port, so the slow and
  // silent ones do not hold the connections of the healthy one.
  explicit Soak(Options o) : o_(std::move(o)), fleet_(o_) {
    for (const Behaviour& b : kBehaviours) {
      auto& r = receivers_[b.path];
      r = std::make_unique<testing::WebhookReceiver>(std::string(b.path) == "/ok" ? 2 : 1,
                                                     /*record=*/false);
      r->SetResponder([this](const Delivery& d) { return Respond(d); });
    }
  }

  int Run() {
    const std::string load_start = ReadLoadAverage();
    for (int i = 0; i < fleet_.size(); ++i) {
      if (!fleet_.Start(i)) return 1;
    }
    if (o_.mode == "cluster" && !SharesSettled()) {
      std::fprintf(stderr, "soak: the nodes never owned all 32 shards between them\n");
      return 1;
    }
    start_ms_ = WallMs();
    Event(-1, "start", "");
    std::thread sampler([this] { Sample(); });
    std::thread chaos([this] { Chaos(); });
    std::vector<std::thread> load;
    for (int t = 0; t < o_.threads; ++t) load.emplace_back([this, t] { Load(t); });
    const auto until = std::chrono::steady_clock::now() + seconds(o_.duration_s);
    while (std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(seconds(10));
      std::fprintf(stderr, "soak: %llds, %llu timers sent, %llu requests received, load %s\n",
                   static_cast<long long>((WallMs() - start_ms_) / 1000),
                   static_cast<unsigned long long>(sent_.load()),
                   static_cast<unsigned long long>(received_.load()), ReadLoadAverage().c_str());
    }
    // The chaos thread stays alive until the nodes are stopped: a node dies
    // with the thread that started it (PR_SET_PDEATHSIG).
    stop_chaos_.store(true);
    while (!chaos_idle_.load()) std::this_thread::sleep_for(milliseconds(100));
    stop_load_.store(true);
    for (auto& t : load) t.join();
    end_load_ms_ = WallMs();
    Event(-1, "load stopped", "");

    std::map<std::uint64_t, std::string> states = WaitForEverythingDue();
    std::this_thread::sleep_for(seconds(2));  // let the sampler read the last counters
    stop_sampling_.store(true);
    sampler.join();
    std::vector<int> exit_codes;
    for (int i = 0; i < fleet_.size(); ++i) exit_codes.push_back(fleet_.node(i).Terminate());
    release_chaos_.store(true);
    chaos.join();
    const Verdict v = ledger_.Judge(
        [&](std::uint64_t n) {
          auto it = states.find(n);
          return it != states.end() ? it->second : std::string();
        },
        start_ms_);
    WriteReport(v, states, exit_codes, load_start);
    Print(v);
    for (int i = 0; i < fleet_.size(); ++i) {  // the servers' logs beside the report
      const std::string prefix = o_.out + ".node" + std::to_string(i);
      std::ofstream(prefix + ".log") << fleet_.node(i).log();
      std::error_code ec;  // RocksDB's own (embedded mode)
      std::filesystem::copy_file(fleet_.data_dir(i) + "/LOG", prefix + ".rocksdb.log",
                                 std::filesystem::copy_options::overwrite_existing, ec);
    }
    return v.lost == 0 && v.early == 0 && v.fired_after_cancel == 0 ? 0 : 2;
  }

 private:
  Reply Respond(const Delivery& d) {
    received_.fetch_add(1);
    Reply r;
    bool ok = true;
    bool late = false;
    if (d.path == "/flaky" && Dice(d, 1) < 0.5) {
      r.status = Dice(d, 2) < 0.3 ? 503 : 500;
      if (r.status == 503) r.retry_after = "1";
      ok = false;
    } else if (d.path == "/slow") {
      const bool too_slow = Dice(d, 1) < 0.25;
      r.delay = milliseconds(too_slow ? kDeliveryTimeoutMs + 1000
                                      : 100 + static_cast<int>(Dice(d, 2) * 1400));
      ok = !too_slow;
      late = too_slow;
    } else if (d.path == "/reset" && d.attempt == 1) {
      r.mode = Reply::Mode::kReset;
      ok = false;
    } else if (d.path == "/stall" && d.attempt == 1) {
      r.mode = Reply::Mode::kNeverAnswer;
      ok = false;
    } else if (d.path == "/dead") {
      r.status = 500;
      ok = false;
    }
    if (auto it = by_path_.find(d.path); it != by_path_.end()) {
      it->second.requests.fetch_add(1);
      if (ok) it->second.ok.fetch_add(1);
    }
    const std::int64_t n = TimerIndex(d.id);
    ledger_.Received({n < 0 ? std::numeric_limits<std::uint32_t>::max() : static_cast<std::uint32_t>(n),
                      static_cast<std::uint16_t>(d.attempt), ok, late, d.fire_at_ms, d.received_ms});
    return r;
  }

  // One client thread: creates at its share of the rate, and now and then a
  // reschedule, cancel or read of one of its own acknowledged timers.
  void Load(int t) {
    std::mt19937 rng(o_.seed * 1000 + static_cast<unsigned>(t));
    std::uniform_real_distribution<double> u(0, 1);
    std::vector<Client> clients(static_cast<std::size_t>(fleet_.size()));
    for (int i = 0; i < fleet_.size(); ++i) {
      clients[i].http = std::make_unique<BlockingHttpClient>(fleet_.address(i), seconds(3));
    }
    struct Mine {
      std::uint64_t n;
      std::int64_t fire_ms;
    };
    std::vector<Mine> pool;  // acknowledged, untouched by an uncertain change
    auto pick = [&](std::int64_t later_than_ms) -> std::size_t {
      for (int tries = 0; tries < 8 && !pool.empty(); ++tries) {
        const std::size_t i = rng() % pool.size();
        if (pool[i].fire_ms > later_than_ms) return i;
      }
      return pool.size();
    };
    auto drop = [&](std::size_t i) {
      pool[i] = pool.back();
      pool.pop_back();
    };
    const double per_second = o_.rate / o_.threads;
    auto next = std::chrono::steady_clock::now();
    while (!stop_load_.load()) {
      Client& client = clients[rng() % clients.size()];
      const double op = u(rng);
      int weight = 1;  // timers this operation counts for, for the pacing
      if (op < 0.70) {
        const int count = op < 0.50 ? 1 : 10 + static_cast<int>(rng() % 51);
        weight = count;
        std::vector<std::uint64_t> ns;
        std::string body;
        for (int k = 0; k < count; ++k) {
          ns.push_back(ledger_.NewTimer());
          double w = u(rng);
          const Behaviour* b = &kBehaviours.back();
          for (const Behaviour& x : kBehaviours) {
            if ((w -= x.weight) < 0) {
              b = &x;
              break;
            }
          }
          const int delay = u(rng) < 0.1 ? 0 : 200 + static_cast<int>(rng() % (kMaxDelayMs - 200));
          body += std::string(k ? "," : "") + "{\"id\":\"" + TimerId(ns.back()) +
                  "\",\"delay_ms\":" + std::to_string(delay) + ",\"target\":{\"url\":\"" +
                  receivers_.at(b->path)->url(b->path) + "\"},\"payload\":{\"n\":" + std::to_string(ns.back()) +
                  "}" +
                  (std::string(b->path) == "/dead"
                       ? ",\"retry\":{\"max_attempts\":3,\"backoff_ms\":100}"
                       : "") +
                  "}";
        }
        sent_.fetch_add(ns.size());
        const Client::Answer a =
            count == 1 ? client.Call("POST", "/v1/timers", body)
                       : client.Call("POST", "/v1/timers:batch", "{\"timers\":[" + body + "]}");
        const server::HttpCallResult& r = a.r;
        if (r.status == 201 || r.status == 200) {
          json::value v = json::parse(r.body);
          if (count == 1) {
            const std::int64_t fire = v.at("fire_at_ms").as_int64();
            ledger_.Created(ns[0], fire);
            pool.push_back({ns[0], fire});
          } else {
            const auto& timers = v.at("timers").as_array();
            for (std::size_t k = 0; k < timers.size(); ++k) {
              const std::int64_t fire = timers[k].at("fire_at_ms").as_int64();
              ledger_.Created(ns[k], fire);
              pool.push_back({ns[k], fire});
            }
          }
        } else if (r.status == 0 && !a.not_sent) {
          for (std::uint64_t n : ns) ledger_.CreateUncertain(n);
        } else {
          refused_.fetch_add(ns.size());  // not sent (the node is down), or 503: nothing stored
        }
        if (pool.size() > 4000) pool.erase(pool.begin(), pool.begin() + 1000);
      } else if (op < 0.85) {
        const std::int64_t sent_ms = WallMs();
        const std::size_t i = pick(sent_ms + 1500);
        if (i < pool.size()) {
          const int delay = 1000 + static_cast<int>(rng() % (kMaxDelayMs - 1000));
          const Client::Answer a = client.Call("PATCH", "/v1/timers/" + TimerId(pool[i].n),
                                               "{\"delay_ms\":" + std::to_string(delay) + "}");
          const server::HttpCallResult& r = a.r;
          if (r.status == 200) {
            pool[i].fire_ms = json::parse(r.body).at("fire_at_ms").as_int64();
            ledger_.Rescheduled(pool[i].n, pool[i].fire_ms);
          } else if (r.status == 0 && !a.not_sent) {
            ledger_.RescheduleUncertain(pool[i].n, sent_ms + delay);
            ledger_.RescheduleUncertain(pool[i].n, WallMs() + delay);
            drop(i);
          } else if (r.status != 503 && r.status != 0) {
            Anomaly("reschedule " + std::to_string(r.status));
            drop(i);
          }
        }
      } else if (op < 0.97) {
        // Mostly timers not due yet; a third any timer (some delivering or
        // done: 409).
        const std::size_t i = pick(u(rng) < 0.33 ? 0 : WallMs() + 1000);
        if (i < pool.size()) {
          const Client::Answer a = client.Call("DELETE", "/v1/timers/" + TimerId(pool[i].n));
          const server::HttpCallResult& r = a.r;
          if (r.status == 200) {
            ledger_.Cancelled(pool[i].n, WallMs());
          } else if (r.status == 409) {
            ledger_.CancelTooLate(pool[i].n);
          } else if (r.status == 0 && !a.not_sent) {
            ledger_.CancelUncertain(pool[i].n);
          } else if (r.status != 503 && r.status != 0) {
            Anomaly("cancel " + std::to_string(r.status));
          }
          if (r.status != 503 && !a.not_sent) drop(i);
        }
      } else if (!pool.empty()) {
        const std::int64_t n = static_cast<std::int64_t>(pool[rng() % pool.size()].n);
        const server::HttpCallResult r =
            client.Call("GET", "/v1/timers/" + TimerId(static_cast<std::uint64_t>(n))).r;
        if (r.status != 200 && r.status != 0 && r.status != 503) {
          Anomaly("get " + std::to_string(r.status));
        }
      }
      next += std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::duration<double>(weight / per_second));
      const auto now = std::chrono::steady_clock::now();
      if (next < now - seconds(2)) next = now;  // after an outage: no burst to catch up
      std::this_thread::sleep_until(next);
    }
  }

  // Whether the nodes own every shard between them (bounded wait): the
  // load starts once they do, as after any deployment.
  bool SharesSettled() {
    for (int attempt = 0; attempt < 600; ++attempt) {
      double owned = 0;
      for (int i = 0; i < fleet_.size(); ++i) {
        BlockingHttpClient client(fleet_.address(i), seconds(2));
        owned += std::max(0.0, MetricOf(client.Call("GET", "/metrics").body,
                                        "tickwheel_cluster_shards_owned"));
      }
      if (owned == 32) return true;
      std::this_thread::sleep_for(milliseconds(50));
    }
    return false;
  }

  // Every 30-60 s: a SIGKILL and a restart 0-3 s later; in cluster mode, as
  // often, a pause past the lease instead.
  void Chaos() {
    std::mt19937 rng(o_.seed + 77);
    auto idle = [this] {
      chaos_idle_.store(true);
      while (!release_chaos_.load()) std::this_thread::sleep_for(milliseconds(100));
    };
    for (;;) {
      const int wait_s = o_.chaos_min_s + static_cast<int>(rng() % static_cast<unsigned>(
                                                               o_.chaos_max_s - o_.chaos_min_s + 1));
      for (int i = 0; i < wait_s * 10; ++i) {
        if (stop_chaos_.load()) return idle();
        std::this_thread::sleep_for(milliseconds(100));
      }
      const int node = static_cast<int>(rng() % static_cast<unsigned>(fleet_.size()));
      if (o_.mode == "cluster" && rng() % 2 == 0) {
        fleet_.Pause(node);
        Event(node, "pause", "SIGSTOP");
        std::this_thread::sleep_for(milliseconds(2 * kLeaseMs + 1000));
        fleet_.Resume(node);
        Event(node, "resume", "SIGCONT");
      } else {
        fleet_.Kill(node);
        Event(node, "kill", "SIGKILL");
        std::this_thread::sleep_for(milliseconds(rng() % 3000));
        const auto t0 = std::chrono::steady_clock::now();
        const bool up = fleet_.Start(node);
        const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        Event(node, up ? "restart" : "restart failed", std::to_string(took) + " s to /healthz");
        if (!up) {
          std::fprintf(stderr, "soak: node %d did not restart:\n%s\n", node,
                       fleet_.node(node).log().c_str());
          std::exit(3);
        }
      }
    }
  }

  // Every second: RSS and open files of each node, the load average, and
  // each node's counters (per incarnation: a restart starts them at 0).
  void Sample() {
    std::vector<std::unique_ptr<BlockingHttpClient>> clients;
    for (int i = 0; i < fleet_.size(); ++i) {
      clients.push_back(std::make_unique<BlockingHttpClient>(fleet_.address(i), milliseconds(500)));
    }
    while (!stop_sampling_.load()) {
      const double t = static_cast<double>(WallMs() - start_ms_) / 1000;
      const std::string load = ReadLoadAverage();
      for (int i = 0; i < fleet_.size(); ++i) {
        const pid_t pid = fleet_.pid(i);
        if (pid <= 0) continue;
        const testing::ProcessStats s = testing::ReadProcessStats(pid);
        if (s.rss_kb < 0) continue;
        json::object sample{{"t", t}, {"node", i}, {"rss_kb", s.rss_kb}, {"fds", s.open_fds},
                            {"load1", std::stod(load)}};
        if (!fleet_.paused(i)) {
          server::HttpCallResult r = clients[i]->Call("GET", "/metrics");
          if (r.status == 200) {
            std::lock_guard lock(mutex_);
            auto& last = counters_[{i, fleet_.incarnation(i)}];
            for (const std::string& name : kCounters) last[name] = std::max(0.0, MetricOf(r.body, name));
            sample["pending"] = MetricOf(r.body, "tickwheel_timers{state=\"pending\"}");
          }
        }
        std::lock_guard lock(mutex_);
        samples_.push_back(std::move(sample));
      }
      std::this_thread::sleep_for(seconds(1));
    }
  }

  // Waits until every acknowledged, not cancelled timer was answered 2xx
  // or is a dead letter, up to 180 s past the latest fire time. Returns the
  // state (by GET) of those that were not answered 2xx.
  std::map<std::uint64_t, std::string> WaitForEverythingDue() {
    const std::int64_t deadline = std::max(ledger_.LatestFireMs(), end_load_ms_) + 180'000;
    BlockingHttpClient client(fleet_.address(0), seconds(5));
    std::map<std::uint64_t, std::string> states;
    for (int passes = 0;; ) {
      const auto outstanding = ledger_.Outstanding();
      std::map<std::uint64_t, std::string> next;
      std::size_t waiting = 0;
      const std::int64_t now = WallMs();
      for (const auto& [n, latest] : outstanding) {
        std::string& state = next[n];
        if (auto it = states.find(n);
            it != states.end() && (it->second == "failed" || it->second == "delivered")) {
          state = it->second;
          continue;
        }
        // Past every retry it could still have: ask the server.
        if (latest + 10'000 < now || now > deadline) {
          server::HttpCallResult r = client.Call("GET", "/v1/timers/" + TimerId(n));
          state = r.status == 200 ? std::string(json::parse(r.body).at("state").as_string())
                                  : "HTTP " + std::to_string(r.status);
          if (state != "failed" && timer_bodies_.size() < 1000) timer_bodies_[n] = r.body;
        } else {
          state = "waiting";
        }
        if (state != "failed" && state != "delivered") ++waiting;
      }
      states.swap(next);
      if (waiting == 0 || now > deadline) break;
      if (++passes % 5 == 0) std::fprintf(stderr, "soak: waiting for %zu timers\n", waiting);
      std::this_thread::sleep_for(seconds(2));
    }
    for (auto it = states.begin(); it != states.end();) {  // keep those never answered 2xx
      it = it->second == "waiting" ? states.erase(it) : std::next(it);
    }
    return states;
  }

  void Event(int node, const std::string& kind, const std::string& detail) {
    std::lock_guard lock(mutex_);
    events_.push_back(json::object{{"t", static_cast<double>(WallMs() - start_ms_) / 1000},
                                   {"node", node}, {"kind", kind}, {"detail", detail}});
    std::fprintf(stderr, "soak: %s node %d %s\n", kind.c_str(), node, detail.c_str());
  }

  void Anomaly(const std::string& what) {
    std::lock_guard lock(mutex_);
    ++anomalies_[what];
  }

  void WriteReport(const Verdict& v, const std::map<std::uint64_t, std::string>& states,
                   const std::vector<int>& exit_codes, const std::string& load_start) {
    std::lock_guard lock(mutex_);
    auto pct = [&](double q) { return Percentile(v.lateness_ms, q); };
    json::object verdict{
        {"sent", v.sent}, {"created", v.created}, {"create_uncertain", v.create_uncertain},
        {"create_refused", refused_.load()}, {"rescheduled", v.rescheduled},
        {"cancelled", v.cancelled}, {"cancel_too_late", v.cancel_too_late},
        {"uncertain_changes", v.uncertain_ops}, {"expected", v.expected},
        {"delivered", v.delivered}, {"dead_letters", v.dead_letters}, {"lost", v.lost},
        {"early", v.early}, {"fired_after_cancel", v.fired_after_cancel},
        {"duplicates", v.duplicates}, {"repeated_attempts", v.repeated_attempts},
        {"requests_received", v.attempts}, {"unacknowledged_deliveries", v.unknown_deliveries},
        {"lateness_ms", json::object{{"p50", pct(0.5)}, {"p90", pct(0.9)}, {"p99", pct(0.99)},
                                     {"p999", pct(0.999)},
                                     {"max", v.lateness_ms.empty() ? 0 : v.lateness_ms.back()}}}};
    json::array examples;
    for (const auto& e : v.examples) examples.emplace_back(e);
    verdict["examples"] = examples;
    json::object not_answered;
    for (const auto& [n, state] : states) {
      not_answered[state] = not_answered.contains(state) ? not_answered[state].as_int64() + 1 : 1;
    }
    verdict["not_answered_2xx_by_state"] = not_answered;
    verdict["late_answers_taken"] = v.late_answers_taken;
    json::object bodies;  // GET of timers not answered in time that are not dead letters
    for (const auto& [n, body] : timer_bodies_) {
      if (!states.contains(n) || bodies.size() >= 20) continue;  // answered in time after all
      boost::system::error_code ec;
      json::value parsed = json::parse(body, ec);
      bodies[TimerId(n)] = ec ? json::value(body) : parsed;
    }
    verdict["not_answered_in_time"] = bodies;

    json::object counters;
    std::map<std::string, double> sums;
    for (const auto& [key, last] : counters_) {
      for (const auto& [name, value] : last) sums[name] += value;
    }
    for (const auto& [name, value] : sums) counters[name] = value;
    counters["incarnations"] = counters_.size();
    json::object behaviours;
    for (auto& [path, c] : by_path_) {
      behaviours[path] = json::object{{"requests", c.requests.load()}, {"ok", c.ok.load()}};
    }
    json::object anomalies;
    for (const auto& [what, n] : anomalies_) anomalies[what] = n;
    json::array series;
    for (const auto& s : v.series) {
      series.push_back(json::object{{"t", s.t_s}, {"count", s.count}, {"p50", s.p50_ms},
                                    {"p99", s.p99_ms}, {"max", s.max_ms}});
    }
    json::object report{
        {"mode", o_.mode}, {"nodes", o_.nodes}, {"duration_s", o_.duration_s},
        {"rate", o_.rate}, {"threads", o_.threads}, {"seed", o_.seed},
        {"start_ms", start_ms_}, {"end_load_ms", end_load_ms_}, {"end_ms", WallMs()},
        {"nproc", sysconf(_SC_NPROCESSORS_ONLN)}, {"load_start", std::stod(load_start)},
        {"load_end", std::stod(ReadLoadAverage())}, {"verdict", verdict},
        {"server_counters", counters}, {"behaviours", behaviours}, {"anomalies", anomalies},
        {"exit_codes", json::value_from(exit_codes)}, {"events", events_},
        {"samples", samples_}, {"lateness_series", series}};
    const std::filesystem::path out(o_.out);
    if (out.has_parent_path()) std::filesystem::create_directories(out.parent_path());
    std::ofstream file(out);
    file << json::serialize(report) << "\n";
    if (!file) std::fprintf(stderr, "soak: could not write %s\n", o_.out.c_str());
  }

  void Print(const Verdict& v) {
    std::printf(
        "soak %s: %llu created, %llu delivered, %llu dead letters, %llu cancelled; lost %llu, "
        "early %llu, fired after cancel %llu, duplicates %llu; lateness p50 %.0f p99 %.0f max "
        "%.0f ms\n",
        o_.mode.c_str(), static_cast<unsigned long long>(v.created),
        static_cast<unsigned long long>(v.delivered), static_cast<unsigned long long>(v.dead_letters),
        static_cast<unsigned long long>(v.cancelled), static_cast<unsigned long long>(v.lost),
        static_cast<unsigned long long>(v.early),
        static_cast<unsigned long long>(v.fired_after_cancel),
        static_cast<unsigned long long>(v.duplicates), Percentile(v.lateness_ms, 0.5),
        Percentile(v.lateness_ms, 0.99), v.lateness_ms.empty() ? 0 : v.lateness_ms.back());
    for (const auto& e : v.examples) std::printf("  %s\n", e.c_str());
  }

  const Options o_;
  Ledger ledger_;
  Fleet fleet_;
  std::map<std::string, std::unique_ptr<testing::WebhookReceiver>> receivers_;
  std::map<std::string, Counts> by_path_ = [] {
    std::map<std::string, Counts> m;
    for (const Behaviour& b : kBehaviours) m[b.path];
    return m;
  }();
  std::int64_t start_ms_ = 0;
  std::int64_t end_load_ms_ = 0;
  std::atomic<bool> stop_load_{false}, stop_chaos_{false}, stop_sampling_{false};
  std::atomic<bool> chaos_idle_{false}, release_chaos_{false};
  std::atomic<std::uint64_t> sent_{0}, received_{0}, refused_{0};
  std::mutex mutex_;  // guards what follows
  json::array events_;
  json::array samples_;
  std::map<std::pair<int, int>, std::map<std::string, double>> counters_;
  std::map<std::string, std::uint64_t> anomalies_;
  std::map<std::uint64_t, std::string> timer_bodies_;  // main thread only
};

}  // namespace
}  // namespace tickwheel::soak

int main(int argc, char** argv) {
  using tickwheel::soak::Options;
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--binary") o.binary = value;
    else if (flag == "--mode") o.mode = value;
    else if (flag == "--out") o.out = value;
    else if (flag == "--duration") o.duration_s = tickwheel::soak::ParseDuration(value);
    else if (flag == "--rate") o.rate = std::stod(value);
    else if (flag == "--threads") o.threads = std::stoi(value);
    else if (flag == "--seed") o.seed = static_cast<unsigned>(std::stoul(value));
    else if (flag == "--chaos") {  // MIN-MAX seconds between chaos events
      o.chaos_min_s = std::stoi(value);
      o.chaos_max_s = std::stoi(value.substr(value.find('-') + 1));
    } else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 1;
    }
  }
  if (o.mode != "embedded" && o.mode != "cluster") {
    std::fprintf(stderr, "--mode is embedded or cluster, not %s\n", o.mode.c_str());
    return 1;
  }
  o.nodes = o.mode == "cluster" ? 3 : 1;
  // Three nodes and PostgreSQL share the same 2 cores: a lighter load.
  if (o.rate <= 0) o.rate = o.mode == "cluster" ? 300 : 500;
  // Many receiver connections at once: raise the soft limit of open files.
  rlimit limit{};
  getrlimit(RLIMIT_NOFILE, &limit);
  limit.rlim_cur = limit.rlim_max;
  setrlimit(RLIMIT_NOFILE, &limit);
  signal(SIGPIPE, SIG_IGN);
  tickwheel::soak::Soak soak(o);
  return soak.Run();
}
