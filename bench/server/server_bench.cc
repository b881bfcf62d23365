// SPDX-License-Identifier: Apache-2.0
// make bench-server: tickwheel serve against a PostgreSQL table polled with
// SKIP LOCKED, measured the same way on the same machine. Prints one JSON
// object (for bench/server/report.py) on stdout and progress on stderr.
//
// Phases (each on a fresh server / a fresh table):
//   batch_creates   timers/s through POST /v1:batch (1000 per request, 4
//                   connections) | multi-row INSERTs of 1000 rows
//   single_creates  timers/s, one per request, 64 keep-alive connections |
//                   single-row INSERTs from 64 connections
//   herd            100,000 timers due within the same second: deliveries/s
//                   at a local receiver, first to last
//   herd_security   the same herd (tickwheel only) over plain HTTP and HTTPS,
//                   each with and without signing (Standard Webhooks, two
//                   secrets); connections and TLS handshakes per delivery
//   lateness        20,000 timers spread over 10 s (2,000/s): received - due
//   backlog         N pending far in the future: server RSS; kill -9,
//                   restart, time to the first overdue delivery
//   cluster         tickwheel serve --postgres on the same PostgreSQL, 1
//                   and 3 nodes: creates, herd, failover, hand-off
//                   (cluster_phases.h); --only-cluster runs just these and
//                   the peer's; --only-cluster-creates only their create
//                   phases (for paired before/after runs: not a JSON
//                   report.py can draw)
//   creates         single creates at 1/8/64 clients and batch creates
//                   beside bare RocksDB and PostgreSQL (create_phases.h)
//   schedules       recurring schedules every minute (1,000,000; QUICK
//                   20,000; --schedules N) on the embedded store and a
//                   3-node cluster, beside one-shot timers at the same rate
//                   (schedule_phases.h); --only-schedules runs just these;
//                   --schedule-payload-pad N pads each schedule's payload
//                   with N bytes (a larger record; the one-shots keep theirs)
//   flows           flow control: a herd throttled by a flow's rate and by
//                   its in-flight cap, 1 and 3 nodes, a second flow's
//                   lateness beside it, the overhead with limits far above
//                   the load (flow_phases.h); --only-flows runs just these
#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.h"
#include "cli/blocking_http_client.h"
#include "cluster_phases.h"
#include "create_phases.h"
#include "flow_phases.h"
#include "load_client.h"
#include "pg_peer.h"
#include "schedule_phases.h"
#include "support/server_process.h"
#include "support/test_pki.h"
#include "support/webhook_receiver.h"

namespace tickwheel::bench {
namespace {

namespace json = boost::json;
using testing::Delivery;
using testing::ServerProcess;
using testing::TempDir;
using testing::WebhookReceiver;

bool WaitCount(WebhookReceiver& receiver, std::size_t n, int seconds) {
  return receiver.WaitFor(n, std::chrono::seconds(seconds));
}

struct Options {
  std::string binary;
  std::string pg;
  std::uint64_t batch_total = 400'000;
  std::uint64_t herd = 100'000;
  std::vector<std::uint64_t> backlogs = {1'000'000, 10'000'000};
  double single_seconds = 10;
  int security_rounds = 5;
};

json::object TickwheelBatchCreates(const Options& o, TempDir& dir) {
  ServerProcess server(o.binary, dir.path() + "/batch", {"--max-batch", "10000"});
  if (!server.Start()) std::exit(1);
  const std::int64_t far = NowMs() + 3'600'000;
  CpuMeter cpu(server.pid());
  const double rate = CreateBatches(server, "b", o.batch_total, 1000, 4,
                                    [&](std::uint64_t) { return far; }, "http://127.0.0.1:9/x");
  json::object r = cpu.Stop();
  r["per_s"] = rate;
  server.Terminate();
  return r;
}

json::object TickwheelSingleCreates(const Options& o, TempDir& dir) {
  ServerProcess server(o.binary, dir.path() + "/single");
  if (!server.Start()) std::exit(1);
  const std::int64_t far = NowMs() + 3'600'000;
  CpuMeter cpu(server.pid());
  LoadResult l = RunLoad("127.0.0.1", server.port(), 64, UINT64_MAX,
                         std::chrono::milliseconds(static_cast<int>(o.single_seconds * 1000)),
                         "/v1/timers",
                         [&](std::uint64_t i) { return Timer("s" + std::to_string(i), far, "http://127.0.0.1:9/x"); },
                         201);
  json::object r = cpu.Stop();
  r["per_s"] = static_cast<double>(l.ok) / l.seconds;
  r["failed"] = l.failed;
  server::BlockingHttpClient client(server.address());
  std::string m = client.Call("GET", "/metrics").body;
  auto metric = [&](const std::string& name) {
    std::size_t at = m.find("\n" + name + " ");
    return at == std::string::npos ? 0.0 : std::stod(m.substr(at + name.size() + 2));
  };
  r["creates_per_fsync"] = r["per_s"].as_double() * l.seconds /
                           std::max(1.0, metric("tickwheel_store_wal_syncs_total"));
  server.Terminate();
  return r;
}

// Creates the herd on `server` (o.herd timers due within one second, 5 s
// from now, to `receiver`), waits until all are delivered, and returns the
// server's CPU over the deliveries, their rate and their lateness.
json::object RunHerd(const Options& o, const ServerProcess& server, WebhookReceiver& receiver) {
  const std::int64_t t0 = NowMs() + 5000;
  CreateBatches(server, "h", o.herd, 10'000, 2,
                [&](std::uint64_t i) { return t0 + static_cast<std::int64_t>(i % 1000); },
                receiver.url());
  if (NowMs() >= t0) std::fprintf(stderr, "  warning: creating the herd took longer than 5 s\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(std::max<std::int64_t>(0, t0 - NowMs())));
  CpuMeter cpu(server.pid());
  const bool all = WaitCount(receiver, o.herd, 300);
  json::object r = cpu.Stop();
  json::object late = LatenessStats(receiver.deliveries());
  r["all_delivered"] = all;
  r["lateness"] = late;
  const double span = static_cast<double>(late["first_to_last_ms"].as_int64()) / 1000.0;
  r["per_s"] = static_cast<double>(o.herd) / std::max(span, 0.001);
  return r;
}

json::object TickwheelHerd(const Options& o, TempDir& dir) {
  WebhookReceiver receiver(1);
  ServerProcess server(o.binary, dir.path() + "/herd", {"--max-batch", "10000"});
  if (!server.Start()) std::exit(1);
  json::object r = RunHerd(o, server, receiver);
  server.Terminate();
  return r;
}

// The herd over http:// or https://, signed or not, all else as in
// TickwheelHerd.
json::object TickwheelHerdVariant(const Options& o, TempDir& dir, testing::TestPki& pki,
                                  const testing::CertFiles& cert, bool tls, bool sign) {
  testing::ReceiverOptions ro;
  ro.threads = 1;
  if (tls) {
    ro.tls_cert = cert.cert;
    ro.tls_key = cert.key;
  }
  WebhookReceiver receiver(ro);
  const std::string name = std::string(tls ? "https" : "http") + (sign ? "-signed" : "");
  std::vector<std::string> args = {"--max-batch", "10000", "--ca-file", pki.ca_file()};
  if (sign) {
    std::ofstream(dir.path() + "/secrets")
        << "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n"
        << "whsec_dGhlIG5ldyBzZWNyZXQgb2YgdGhlIHJvdGF0aW9u\n";
    args.push_back("--webhook-secret-file");
    args.push_back(dir.path() + "/secrets");
  }
  static int run = 0;  // a fresh store each run
  const std::string data = dir.path() + "/herd-" + name + "-" + std::to_string(++run);
  ServerProcess server(o.binary, data, args);
  if (!server.Start()) std::exit(1);
  json::object r = RunHerd(o, server, receiver);
  r["tls"] = tls;
  r["signed"] = sign;
  server::BlockingHttpClient client(server.address());
  const std::string m = client.Call("GET", "/metrics").body;
  auto metric = [&](const std::string& metric_name) {
    const std::size_t at = m.find("\n" + metric_name + " ");
    return at == std::string::npos ? 0.0 : std::stod(m.substr(at + metric_name.size() + 2));
  };
  r["connects"] = metric("tickwheel_webhook_connects_total");
  r["tls_handshakes"] = metric("tickwheel_webhook_tls_handshakes_total");
  r["tls_resumed"] = metric("tickwheel_webhook_tls_resumed_total");
  r["handshakes_per_delivery"] = metric("tickwheel_webhook_tls_handshakes_total") / static_cast<double>(o.herd);
  r["connects_per_delivery"] = metric("tickwheel_webhook_connects_total") / static_cast<double>(o.herd);
  if (sign) {  // a spot check that they are signed
    const Delivery& d = receiver.deliveries().front();
    r["signature_header_bytes"] = d.headers.count("webhook-signature")
                                      ? d.headers.at("webhook-signature").size()
                                      : 0;
  }
  server.Terminate();
  std::filesystem::remove_all(data);
  return r;
}

// The four variants: http, http signed, https, https signed, run in
// `o.security_rounds` interleaved rounds, each in a rotated order (the
// machine is shared: a burst of someone else's work hits one round, not
// one variant). Each variant's
// result is its median round, with every round's deliveries/s and server
// CPU per delivery beside it, and its ratio to plain HTTP taken round by
// round (against the plain HTTP run of the same round), median of those.
json::array TickwheelHerdSecurity(const Options& o, TempDir& dir) {
  testing::TestPki pki(dir.path());
  const testing::CertFiles cert = pki.Issue("receiver", {"IP:127.0.0.1"});
  std::vector<std::vector<json::object>> runs(4);
  auto cpu_us = [&](const json::object& r) {
    const double span = static_cast<double>(r.at("lateness").at("first_to_last_ms").as_int64()) / 1000.0;
    return r.at("server_cpu_pct").as_double() / 100.0 * span * 1e6 / static_cast<double>(o.herd);
  };
  for (int round = 0; round < o.security_rounds; ++round) {
    // Each round starts with another variant, so that none always runs
    // first (or last) when the machine's load drifts.
    for (int k = 0; k < 4; ++k) {
      const int v = (round + k) % 4;
      const bool tls = v >= 2, sign = v % 2 == 1;
      std::fprintf(stderr, "tickwheel: herd over %s%s (round %d of %d)\n", tls ? "https" : "http",
                   sign ? ", signed" : "", round + 1, o.security_rounds);
      json::object r = TickwheelHerdVariant(o, dir, pki, cert, tls, sign);
      r["server_cpu_us_per_delivery"] = cpu_us(r);
      runs[v].push_back(std::move(r));
    }
  }
  auto median = [](std::vector<double> x) {
    std::sort(x.begin(), x.end());
    return x[x.size() / 2];
  };
  json::array variants;
  for (std::size_t v = 0; v < runs.size(); ++v) {
    json::array rates, cpus;
    std::vector<double> ratios, cpu_ratios;
    for (std::size_t round = 0; round < runs[v].size(); ++round) {
      const json::object& r = runs[v][round];
      const json::object& plain = runs[0][round];
      rates.push_back(r.at("per_s"));
      cpus.push_back(r.at("server_cpu_us_per_delivery"));
      ratios.push_back(r.at("per_s").as_double() / plain.at("per_s").as_double());
      cpu_ratios.push_back(r.at("server_cpu_us_per_delivery").as_double() /
                           plain.at("server_cpu_us_per_delivery").as_double());
    }
    std::vector<json::object> sorted = runs[v];
    std::sort(sorted.begin(), sorted.end(), [](const json::object& a, const json::object& b) {
      return a.at("per_s").as_double() < b.at("per_s").as_double();
    });
    json::object out = sorted[sorted.size() / 2];
    out["per_s_rounds"] = std::move(rates);
    out["server_cpu_us_rounds"] = std::move(cpus);
    out["ratio_to_http"] = median(ratios);
    out["cpu_ratio_to_http"] = median(cpu_ratios);
    variants.push_back(std::move(out));
  }
  return variants;
}

json::object TickwheelLateness(const Options& o, TempDir& dir) {
  WebhookReceiver receiver(1);
  ServerProcess server(o.binary, dir.path() + "/lateness", {"--max-batch", "10000"});
  if (!server.Start()) std::exit(1);
  constexpr int kTimers = 20'000;
  const std::int64_t t0 = NowMs() + 3000;
  CreateBatches(server, "l", kTimers, 10'000, 1, [&](std::uint64_t i) { return t0 + static_cast<std::int64_t>(i / 2); },
                receiver.url());
  CpuMeter cpu(server.pid());
  WaitCount(receiver, kTimers, 120);
  json::object r = cpu.Stop();
  r["lateness"] = LatenessStats(receiver.deliveries());
  (void)o;
  server.Terminate();
  return r;
}

json::object TickwheelBacklog(const Options& o, TempDir& dir, std::uint64_t n) {
  WebhookReceiver receiver(1);
  const std::string data = dir.path() + "/backlog" + std::to_string(n);
  ServerProcess server(o.binary, data, {"--max-batch", "10000"});
  if (!server.Start()) std::exit(1);
  const std::int64_t far = NowMs() + 3'600'000;
  CpuMeter cpu(server.pid());
  const double rate = CreateBatches(server, "f", n, 10'000, 2, [&](std::uint64_t) { return far; },
                                    "http://127.0.0.1:9/x");
  json::object r;
  r["pending"] = n;
  r["create_per_s"] = rate;
  r["create_cpu"] = cpu.Stop();
  // Overdue by the time the server is back.
  const std::int64_t near = NowMs() + 1000;
  CreateBatches(server, "n", 1000, 1000, 1, [&](std::uint64_t) { return near; }, receiver.url());
  r["rss_bytes_running"] = ProcRssBytes(server.pid());
  server.Kill();
  std::this_thread::sleep_for(std::chrono::milliseconds(std::max<std::int64_t>(0, near - NowMs() + 200)));
  const std::int64_t restart = NowMs();
  if (!server.Start()) std::exit(1);
  WaitCount(receiver, 1, 60);
  std::int64_t first = INT64_MAX;
  for (const Delivery& d : receiver.deliveries()) first = std::min(first, d.received_ms);
  r["restart_to_first_delivery_ms"] = first - restart;
  WaitCount(receiver, 1000, 60);
  r["rss_bytes_after_restart"] = ProcRssBytes(server.pid());
  std::uintmax_t bytes = 0;
  for (auto& f : std::filesystem::recursive_directory_iterator(data)) {
    if (f.is_regular_file()) bytes += f.file_size();
  }
  r["store_bytes"] = bytes;
  server.Terminate();
  std::filesystem::remove_all(data);
  return r;
}

// --- PostgreSQL ---

std::vector<PgTimer> PgTimers(const std::string& prefix, std::uint64_t n,
                              const std::function<std::int64_t(std::uint64_t)>& fire_at,
                              const std::string& url) {
  std::vector<PgTimer> t;
  t.reserve(n);
  for (std::uint64_t i = 0; i < n; ++i) t.push_back({prefix + std::to_string(i), fire_at(i), url, "{\"n\":1}"});
  return t;
}

json::object PgBatchCreates(const Options& o, PgPeer& pg) {
  std::string error;
  pg.Reset(&error);
  const std::int64_t far = NowMs() + 3'600'000;
  auto timers = PgTimers("b", o.batch_total, [&](std::uint64_t) { return far; }, "http://127.0.0.1:9/x");
  CpuMeter cpu;
  const double rate = pg.InsertBatches(timers, 1000, 4);
  json::object r = cpu.Stop();
  r["per_s"] = rate;
  return r;
}

json::object PgSingleCreates(const Options& o, PgPeer& pg) {
  std::string error;
  pg.Reset(&error);
  CpuMeter cpu;
  const double rate = pg.InsertSingles(64, UINT64_MAX, o.single_seconds, "http://127.0.0.1:9/x",
                                       NowMs() + 3'600'000);
  json::object r = cpu.Stop();
  r["per_s"] = rate;
  return r;
}

json::object PgDeliveries(PgPeer& pg, std::uint64_t n, std::int64_t lead_ms,
                          const std::function<std::int64_t(std::int64_t, std::uint64_t)>& fire_at,
                          bool herd) {
  std::string error;
  pg.Reset(&error);
  WebhookReceiver receiver(1);
  const std::int64_t t0 = NowMs() + lead_ms;
  auto timers = PgTimers(herd ? "h" : "l", n, [&](std::uint64_t i) { return fire_at(t0, i); }, receiver.url());
  pg.InsertBatches(timers, 1000, 4);
  if (NowMs() >= t0) std::fprintf(stderr, "  warning: inserting took longer than the lead time\n");
  pg.StartWorkers(32, 50, 10);
  std::this_thread::sleep_for(std::chrono::milliseconds(std::max<std::int64_t>(0, t0 - NowMs())));
  CpuMeter cpu;
  const bool all = WaitCount(receiver, n, 300);
  json::object r = cpu.Stop();
  pg.StopWorkers();
  json::object late = LatenessStats(receiver.deliveries());
  r["all_delivered"] = all;
  r["lateness"] = late;
  if (herd) {
    const double span = static_cast<double>(late["first_to_last_ms"].as_int64()) / 1000.0;
    r["per_s"] = static_cast<double>(n) / std::max(span, 0.001);
    std::int64_t last = 0;
    for (const Delivery& d : receiver.deliveries()) last = std::max(last, d.received_ms);
    r["drain_ms"] = last - t0;  // from the first due time to the last delivery
  }
  return r;
}

// The PostgreSQL + SKIP LOCKED peer's phases, into out["postgres"].
// With `creates_only`, only its create phases.
bool RunPeer(const Options& o, boost::json::object& out, bool creates_only = false) {
  PgPeer pg(o.pg);
  std::string error;
  if (!pg.Reset(&error)) {
    std::fprintf(stderr, "postgres: %s\n", error.c_str());
    return false;
  }
  boost::json::object p;
  std::fprintf(stderr, "postgres: batch inserts\n");
  p["batch_creates"] = PgBatchCreates(o, pg);
  std::fprintf(stderr, "postgres: single inserts\n");
  p["single_creates"] = PgSingleCreates(o, pg);
  if (creates_only) {
    out["postgres"] = std::move(p);
    return true;
  }
  std::fprintf(stderr, "postgres: herd\n");
  p["herd"] = PgDeliveries(pg, o.herd, 8000, [](std::int64_t t0, std::uint64_t i) { return t0 + static_cast<std::int64_t>(i % 1000); }, true);
  std::fprintf(stderr, "postgres: lateness\n");
  p["lateness"] = PgDeliveries(pg, 20'000, 3000, [](std::int64_t t0, std::uint64_t i) { return t0 + static_cast<std::int64_t>(i / 2); }, false);
  out["postgres"] = std::move(p);
  return true;
}

}  // namespace
}  // namespace tickwheel::bench

int main(int argc, char** argv) {
  using namespace tickwheel::bench;
  Options o;
  bool only_security = false;  // just the herd_security phase (for a quick look)
  bool only_cluster = false;   // the peer and the cluster phases (cluster_phases.h)
  bool only_creates = false;   // just the create phases (create_phases.h)
  bool only_schedules = false;  // just the schedule phases (schedule_phases.h)
  bool only_flows = false;     // just the flow phases (flow_phases.h)
  ClusterOptions cluster;
  CreatePhaseOptions creates;
  SchedulePhaseOptions schedules;
  std::uint64_t schedule_count = 0;  // --schedules N (0: the default or QUICK's)
  FlowPhaseOptions flows;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--only-security") only_security = true;
    else if (a == "--only-cluster") only_cluster = true;
    else if (a == "--only-cluster-creates") only_cluster = cluster.creates_only = true;
    else if (a == "--only-creates") only_creates = true;
    else if (a == "--only-schedules") only_schedules = true;
    else if (a == "--schedules" && i + 1 < argc) schedule_count = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--schedule-payload-pad" && i + 1 < argc) {
      schedules.payload_pad = std::strtoull(argv[++i], nullptr, 10);
    }
    else if (a == "--cluster-schedules" && i + 1 < argc) {
      schedules.cluster_schedules = std::strtoull(argv[++i], nullptr, 10);
    }
    else if (a == "--only-flows") only_flows = true;
    else if (a == "--flow-nodes" && i + 1 < argc) flows.nodes = {std::atoi(argv[++i])};
    else if (a == "--flow-rate-only") flows.rate_only = true;
    else if (a == "--creates-system" && i + 1 < argc) creates.only_systems.push_back(argv[++i]);
    else if (a == "--creates-clients" && i + 1 < argc) creates.clients = {std::atoi(argv[++i])};
    else if (a == "--creates-seconds" && i + 1 < argc) creates.seconds = std::atof(argv[++i]);
    else if (a == "--creates-rounds" && i + 1 < argc) creates.rounds = std::atoi(argv[++i]);
    else if (a == "--no-batches") creates.batches = false;
    else if (a == "--only-batches") creates.clients.clear();
    else if (a == "--binary" && i + 1 < argc) o.binary = argv[++i];
    else if (a == "--pg" && i + 1 < argc) o.pg = argv[++i];
    else if (a == "--quick") {
      o.batch_total = 100'000;
      o.herd = 50'000;
      o.backlogs = {1'000'000};
      o.single_seconds = 5;
      o.security_rounds = 1;
      cluster = QuickClusterOptions(cluster);
      creates.seconds = 2;
      creates.rounds = 1;
      creates.batch_total = 100'000;
      schedules.schedules = 20'000;
      flows.herd = 10'000;
      flows.second_flow_timers = 500;
      flows.overhead_rounds = 1;
      flows.memory_timers = 100'000;
    } else {
      std::fprintf(stderr, "usage: server_bench --binary build/tickwheel [--pg CONNINFO] [--quick] "
                           "[--only-security | --only-cluster | --only-cluster-creates | --only-flows | --only-creates "
                           "[--creates-system S]... [--creates-clients N] [--creates-seconds S] "
                           "[--creates-rounds N] [--no-batches | --only-batches] | --only-schedules] "
                           "[--schedules N] [--cluster-schedules N] [--flow-nodes 1|3] [--flow-rate-only]\n");
      return 2;
    }
  }
  if (o.binary.empty()) o.binary = TICKWHEEL_BINARY;
  cluster.binary = o.binary;
  cluster.pg = o.pg;
  cluster.batch_total = o.batch_total;  // the peer's sizes, for ratios
  cluster.herd = o.herd;
  cluster.single_seconds = o.single_seconds;
  creates.binary = o.binary;
  creates.pg = o.pg;
  schedules.binary = o.binary;
  schedules.pg = o.pg;
  if (schedule_count > 0) schedules.schedules = schedule_count;
  if (only_schedules) {
    boost::json::object out;
    out["schedules"] = RunSchedulePhases(schedules);
    std::printf("%s\n", boost::json::serialize(out).c_str());
    return 0;
  }
  flows.binary = o.binary;
  flows.pg = o.pg;
  if (only_flows) {
    boost::json::object out;
    out["load_average_start"] = LoadAverage();
    out["flows"] = RunFlowPhases(flows);
    out["load_average_end"] = LoadAverage();
    std::printf("%s\n", boost::json::serialize(out).c_str());
    return 0;
  }
  if (only_creates) {
    TempDir dir;
    creates.data_dir = dir.path();
    boost::json::object out;
    out["creates"] = RunCreatePhases(creates);
    std::printf("%s\n", boost::json::serialize(out).c_str());
    return 0;
  }
  if (only_security) {
    TempDir dir;
    boost::json::object out;
    out["load_average_start"] = LoadAverage();
    out["herd_size"] = o.herd;
    out["herd_security"] = TickwheelHerdSecurity(o, dir);
    out["load_average_end"] = LoadAverage();
    std::printf("%s\n", boost::json::serialize(out).c_str());
    return 0;
  }
  if (only_cluster) {
    if (o.pg.empty()) {
      std::fprintf(stderr, "--only-cluster needs --pg\n");
      return 2;
    }
    boost::json::object out;
    out["load_average_start"] = LoadAverage();
    out["herd_size"] = o.herd;
    out["batch_total"] = o.batch_total;
    if (!RunPeer(o, out, cluster.creates_only)) return 1;
    out["cluster"] = RunClusterPhases(cluster);
    out["load_average_end"] = LoadAverage();
    std::printf("%s\n", boost::json::serialize(out).c_str());
    return 0;
  }
  TempDir dir;
  boost::json::object out;
  out["load_average_start"] = LoadAverage();
  out["herd_size"] = o.herd;
  out["batch_total"] = o.batch_total;
  boost::json::object tw;
  std::fprintf(stderr, "tickwheel: batch creates\n");
  tw["batch_creates"] = TickwheelBatchCreates(o, dir);
  std::fprintf(stderr, "tickwheel: single creates\n");
  tw["single_creates"] = TickwheelSingleCreates(o, dir);
  std::fprintf(stderr, "tickwheel: herd\n");
  tw["herd"] = TickwheelHerd(o, dir);
  tw["herd_security"] = TickwheelHerdSecurity(o, dir);
  std::fprintf(stderr, "tickwheel: lateness\n");
  tw["lateness"] = TickwheelLateness(o, dir);
  boost::json::array backlogs;
  for (std::uint64_t n : o.backlogs) {
    std::fprintf(stderr, "tickwheel: backlog of %llu\n", static_cast<unsigned long long>(n));
    backlogs.push_back(TickwheelBacklog(o, dir, n));
  }
  tw["backlog"] = std::move(backlogs);
  out["tickwheel"] = std::move(tw);
  creates.data_dir = dir.path() + "/creates";
  out["creates"] = RunCreatePhases(creates);
  if (!o.pg.empty()) {
    if (!RunPeer(o, out, cluster.creates_only)) return 1;
    out["cluster"] = RunClusterPhases(cluster);
  }
  out["schedules"] = RunSchedulePhases(schedules);
  out["flows"] = RunFlowPhases(flows);
  out["load_average_end"] = LoadAverage();
  std::printf("%s\n", boost::json::serialize(out).c_str());
  return 0;
}
