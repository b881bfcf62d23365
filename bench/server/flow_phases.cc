// SPDX-License-Identifier: Apache-2.0
#include "flow_phases.h"

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "bench_cluster.h"
#include "bench_util.h"
#include "cli/blocking_http_client.h"
#include "load_client.h"
#include "support/server_process.h"
#include "support/webhook_receiver.h"

namespace tickwheel::bench {
namespace {

namespace json = boost::json;
using testing::Delivery;
using testing::ServerProcess;
using testing::TempDir;
using testing::WebhookReceiver;

// One embedded node, or three cluster nodes.
class Servers {
 public:
  Servers(const FlowPhaseOptions& o, int nodes, const std::string& name) {
    const std::vector<std::string> args = {"--max-batch", "10000"};
    if (nodes == 1) {
      single_ = std::make_unique<ServerProcess>(o.binary, dir_.path() + "/" + name, args);
      if (!single_->Start()) std::exit(1);
    } else {
      cluster_ = std::make_unique<BenchCluster>(o.binary, o.pg, o.shards, "flow_" + name, nodes,
                                                10'000, args);
    }
  }
  int size() const { return single_ ? 1 : cluster_->size(); }
  ServerProcess& node(int i) { return single_ ? *single_ : cluster_->node(i); }
  std::vector<CpuMeter> Meters() {
    if (cluster_) return cluster_->Meters();
    return {CpuMeter(single_->pid())};
  }
  static json::object Stop(const std::vector<CpuMeter>& meters) {
    return BenchCluster::Stop(meters);
  }

 private:
  TempDir dir_;
  std::unique_ptr<ServerProcess> single_;
  std::unique_ptr<BenchCluster> cluster_;
};

std::string FlowTimer(const std::string& id, std::int64_t fire_at_ms, const std::string& url,
                      const std::string& flow) {
  std::string t = Timer(id, fire_at_ms, url);
  if (!flow.empty()) t.insert(t.size() - 1, ",\"flow\":\"" + flow + "\"");
  return t;
}

// Creates prefix0 .. prefix(n-1) of `flow` ("": its target's host:port),
// spread over the nodes, 10,000 a batch on two connections per node.
void Create(Servers& servers, const std::string& prefix, std::uint64_t n,
            const std::function<std::int64_t(std::uint64_t)>& fire_at, const std::string& url,
            const std::string& flow) {
  constexpr std::uint64_t kPerBatch = 10'000;
  const std::uint64_t batches = (n + kPerBatch - 1) / kPerBatch;
  std::vector<std::thread> threads;
  for (int node = 0; node < servers.size(); ++node) {
    threads.emplace_back([&, node] {
      std::vector<std::uint64_t> mine;
      for (std::uint64_t b = static_cast<std::uint64_t>(node); b < batches;
           b += static_cast<std::uint64_t>(servers.size())) {
        mine.push_back(b);
      }
      LoadResult r = RunLoad(
          "127.0.0.1", servers.node(node).port(), 2, mine.size(), std::chrono::hours(1),
          "/v1/timers:batch",
          [&](std::uint64_t k) {
            const std::uint64_t b = mine[k];
            std::string body = "{\"timers\":[";
            for (std::uint64_t i = b * kPerBatch; i < std::min(n, (b + 1) * kPerBatch); ++i) {
              if (i > b * kPerBatch) body += ',';
              body += FlowTimer(prefix + std::to_string(i), fire_at(i), url, flow);
            }
            return body + "]}";
          },
          201);
      if (r.failed) std::fprintf(stderr, "  %llu batches failed\n", static_cast<unsigned long long>(r.failed));
    });
  }
  for (auto& t : threads) t.join();
}

bool PutFlow(Servers& servers, const std::string& key, const std::string& body) {
  server::BlockingHttpClient client(servers.node(0).address(), std::chrono::seconds(10));
  const server::HttpCallResult r = client.Call("PUT", "/v1/flows/" + key, body);
  if (r.status != 200) std::fprintf(stderr, "  PUT /v1/flows/%s: %d %s\n", key.c_str(), r.status, r.body.c_str());
  return r.status == 200;
}

// Deliveries per second as the receiver saw them: each whole second from
// the first delivery (the last, partial one left out), max and p50; and the
// most in any 1000 ms window.
json::object PerSecond(std::vector<Delivery> d) {
  json::object o;
  if (d.empty()) return o;
  std::sort(d.begin(), d.end(),
            [](const Delivery& a, const Delivery& b) { return a.received_ms < b.received_ms; });
  const std::int64_t first = d.front().received_ms;
  std::map<std::int64_t, std::int64_t> buckets;
  for (const Delivery& x : d) ++buckets[(x.received_ms - first) / 1000];
  std::vector<std::int64_t> counts;
  const std::int64_t last_second = buckets.rbegin()->first;
  for (std::int64_t s = 0; s < std::max<std::int64_t>(1, last_second); ++s) {
    counts.push_back(buckets.count(s) ? buckets[s] : 0);
  }
  std::vector<std::int64_t> sorted = counts;
  std::sort(sorted.begin(), sorted.end());
  std::size_t best = 0, lo = 0;
  for (std::size_t hi = 0; hi < d.size(); ++hi) {
    while (d[hi].received_ms - d[lo].received_ms >= 1000) ++lo;
    best = std::max(best, hi - lo + 1);
  }
  o["seconds"] = counts.size();
  o["max"] = sorted.back();
  o["p50"] = sorted[sorted.size() / 2];
  o["window_max"] = best;
  o["first_to_last_ms"] = d.back().received_ms - first;
  return o;
}

// When the servers started each of `n` timers' first attempt (prefix0 ..
// prefix(n-1), from their attempt logs), as the deliveries' received_ms:
// what the flow's limits bound, without the delays between a start and
// the receiver reading it. Read from every node at once.
std::vector<Delivery> Starts(Servers& servers, const std::string& prefix, std::uint64_t n) {
  std::vector<std::vector<Delivery>> per_node(static_cast<std::size_t>(servers.size()));
  std::vector<std::thread> threads;
  for (int node = 0; node < servers.size(); ++node) {
    threads.emplace_back([&, node] {
      server::BlockingHttpClient client(servers.node(node).address(), std::chrono::seconds(30));
      for (std::uint64_t i = static_cast<std::uint64_t>(node); i < n;
           i += static_cast<std::uint64_t>(servers.size())) {
        const std::string id = prefix + std::to_string(i);
        const server::HttpCallResult r = client.Call("GET", "/v1/timers/" + id);
        if (r.status != 200) continue;
        const json::value v = json::parse(r.body);
        const json::array& log = v.at("attempt_log").as_array();
        if (log.empty()) continue;
        Delivery d;
        d.id = id;
        d.received_ms = log.front().at("started_ms").to_number<std::int64_t>();
        per_node[static_cast<std::size_t>(node)].push_back(std::move(d));
      }
    });
  }
  for (auto& t : threads) t.join();
  std::vector<Delivery> all;
  for (auto& v : per_node) all.insert(all.end(), v.begin(), v.end());
  return all;
}

void SleepUntil(std::int64_t ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(std::max<std::int64_t>(0, ms - NowMs())));
}

// The second flow: `n` timers due evenly over 10 s from t0 (no limits).
void CreateSecond(const FlowPhaseOptions& o, Servers& servers, std::int64_t t0,
                  const std::string& url) {
  const auto n = static_cast<std::uint64_t>(o.second_flow_timers);
  Create(servers, "second-", n,
         [&](std::uint64_t i) { return t0 + static_cast<std::int64_t>(i * 10'000 / n); }, url, "");
}

// The herd at the flow's rate, with the second flow beside it.
json::object RatePhase(const FlowPhaseOptions& o, int nodes) {
  WebhookReceiver herd(1), second(1);
  Servers servers(o, nodes, "rate" + std::to_string(nodes));
  PutFlow(servers, "herd", "{\"rate_per_s\":" + std::to_string(o.rate) +
                               ",\"burst\":" + std::to_string(o.burst) + "}");
  const std::int64_t t0 = NowMs() + 10'000;
  Create(servers, "h", o.herd, [&](std::uint64_t i) { return t0 + static_cast<std::int64_t>(i % 1000); },
         herd.url(), "herd");
  CreateSecond(o, servers, t0 + 1000, second.url());
  if (NowMs() >= t0) std::fprintf(stderr, "  warning: creating took longer than 10 s\n");
  SleepUntil(t0);
  auto meters = servers.Meters();
  const int patience = static_cast<int>(static_cast<double>(o.herd) / o.rate * 1.5) + 120;
  const bool all = herd.WaitFor(o.herd, std::chrono::seconds(patience));
  second.WaitFor(static_cast<std::size_t>(o.second_flow_timers), std::chrono::seconds(60));
  json::object r = Servers::Stop(meters);
  const std::vector<Delivery> starts = Starts(servers, "h", o.herd);
  const std::vector<Delivery> d = herd.deliveries();
  const auto [distinct, duplicates] = Distinct(d);
  r["timers"] = o.herd;
  r["rate_per_s"] = o.rate;
  r["burst"] = o.burst;
  r["all_delivered"] = all && distinct == o.herd;
  r["duplicates"] = duplicates;
  r["per_second"] = PerSecond(d);
  r["starts_read"] = starts.size();
  r["starts_per_second"] = PerSecond(starts);
  r["second_flow"] = LatenessStats(second.deliveries());
  return r;
}

json::object CapPhase(const FlowPhaseOptions& o, int nodes) {
  WebhookReceiver receiver(4);
  const auto delay = std::chrono::milliseconds(o.receiver_delay_ms);
  receiver.SetResponder([delay](const Delivery&) {
    testing::Reply r;
    r.delay = delay;
    return r;
  });
  Servers servers(o, nodes, "cap" + std::to_string(nodes));
  PutFlow(servers, "capped", "{\"max_in_flight\":" + std::to_string(o.max_in_flight) + "}");
  const std::int64_t t0 = NowMs() + 10'000;
  Create(servers, "c", o.herd, [&](std::uint64_t i) { return t0 + static_cast<std::int64_t>(i % 1000); },
         receiver.url(), "capped");
  SleepUntil(t0);
  auto meters = servers.Meters();
  const bool all = receiver.WaitFor(o.herd, std::chrono::seconds(600));
  json::object r = Servers::Stop(meters);
  const std::vector<Delivery> d = receiver.deliveries();
  const auto [distinct, duplicates] = Distinct(d);
  r["timers"] = o.herd;
  r["max_in_flight"] = o.max_in_flight;
  r["receiver_delay_ms"] = o.receiver_delay_ms;
  r["all_delivered"] = all && distinct == o.herd;
  r["duplicates"] = duplicates;
  r["peak_concurrency"] = receiver.max_in_progress();
  const json::object per = PerSecond(d);
  r["per_s"] = static_cast<double>(o.herd) /
               std::max(0.001, static_cast<double>(per.at("first_to_last_ms").as_int64()) / 1000.0);
  return r;
}

json::object SecondAlone(const FlowPhaseOptions& o, int nodes) {
  WebhookReceiver second(1);
  Servers servers(o, nodes, "alone" + std::to_string(nodes));
  const std::int64_t t0 = NowMs() + 3000;
  CreateSecond(o, servers, t0, second.url());
  second.WaitFor(static_cast<std::size_t>(o.second_flow_timers), std::chrono::seconds(60));
  return LatenessStats(second.deliveries());
}

// The herd with no limits, flow control off (no settings) or on (limits
// far above the load on the herd's flow).
json::object OverheadRun(const FlowPhaseOptions& o, int nodes, bool on, int round) {
  WebhookReceiver receiver(1);
  Servers servers(o, nodes, std::string(on ? "on" : "off") + std::to_string(nodes) + "r" +
                                std::to_string(round));
  if (on) {
    PutFlow(servers, "127.0.0.1:" + std::to_string(receiver.port()),
            R"({"rate_per_s":1000000,"burst":1000000,"max_in_flight":1000000})");
  }
  const std::int64_t t0 = NowMs() + 10'000;
  Create(servers, "o", o.herd, [&](std::uint64_t i) { return t0 + static_cast<std::int64_t>(i % 1000); },
         receiver.url(), "");
  SleepUntil(t0);
  auto meters = servers.Meters();
  const bool all = receiver.WaitFor(o.herd, std::chrono::seconds(300));
  json::object r = Servers::Stop(meters);
  const json::object late = LatenessStats(receiver.deliveries());
  r["all_delivered"] = all;
  r["per_s"] = static_cast<double>(o.herd) /
               std::max(0.001, static_cast<double>(late.at("first_to_last_ms").as_int64()) / 1000.0);
  // The servers' CPU time per delivery: what flow control costs, whatever
  // share of the machine the servers got (deliveries/s alone follows it).
  r["server_cpu_us_per_delivery"] = r.at("server_cpu_pct").as_double() / 100 *
                                    r.at("wall_s").as_double() * 1e6 /
                                    static_cast<double>(o.herd);
  r["lateness"] = late;
  return r;
}

json::object Overhead(const FlowPhaseOptions& o, int nodes, int rounds) {
  json::array off, on;
  std::vector<double> ratios, cpu_ratios;
  for (int round = 0; round < rounds; ++round) {
    // Each round starts with the other one (the machine's load drifts).
    json::object a, b;
    if (round % 2 == 0) {
      a = OverheadRun(o, nodes, false, round);
      b = OverheadRun(o, nodes, true, round);
    } else {
      b = OverheadRun(o, nodes, true, round);
      a = OverheadRun(o, nodes, false, round);
    }
    ratios.push_back(b.at("per_s").as_double() / a.at("per_s").as_double());
    cpu_ratios.push_back(b.at("server_cpu_us_per_delivery").as_double() /
                         a.at("server_cpu_us_per_delivery").as_double());
    std::fprintf(stderr, "  round %d: off %.0f/s %.1f us/delivery, on %.0f/s %.1f us/delivery\n",
                 round + 1, a.at("per_s").as_double(),
                 a.at("server_cpu_us_per_delivery").as_double(), b.at("per_s").as_double(),
                 b.at("server_cpu_us_per_delivery").as_double());
    off.push_back(std::move(a));
    on.push_back(std::move(b));
  }
  json::object r;
  std::sort(cpu_ratios.begin(), cpu_ratios.end());
  r["cpu_ratio"] = cpu_ratios[cpu_ratios.size() / 2];
  r["cpu_ratios"] = json::value_from(cpu_ratios);
  std::sort(ratios.begin(), ratios.end());
  r["off"] = std::move(off);
  r["on"] = std::move(on);
  r["ratio"] = ratios[ratios.size() / 2];
  r["ratios"] = json::value_from(ratios);
  return r;
}

std::size_t RssBytes(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  return 0;
}

// Memory: `n` timers pending (due in an hour) against `n` due now behind a
// flow of 10 a second, each on a fresh embedded server: its RSS and the
// timers it holds in memory, a few seconds after the creates.
json::object MemoryPhase(const FlowPhaseOptions& o) {
  json::object out;
  out["timers"] = o.memory_timers;
  for (const bool due : {false, true}) {
    WebhookReceiver receiver(1);
    Servers servers(o, 1, due ? "memory-due" : "memory-pending");
    if (due) PutFlow(servers, "slow", R"({"rate_per_s":10,"burst":1})");
    const std::int64_t at = due ? NowMs() : NowMs() + 3'600'000;
    Create(servers, "m", o.memory_timers, [&](std::uint64_t) { return at; }, receiver.url(),
           due ? "slow" : "");
    std::this_thread::sleep_for(std::chrono::seconds(5));
    json::object r;
    r["rss_bytes"] = RssBytes(servers.node(0).pid());
    r["in_memory"] = Metric(servers.node(0).address(), "tickwheel_timers_in_window");
    r["delivered_meanwhile"] = receiver.count();
    out[due ? "due_behind_10_per_s" : "pending"] = std::move(r);
  }
  return out;
}

}  // namespace

json::object RunFlowPhases(const FlowPhaseOptions& o) {
  json::object out;
  out["nice"] = getpriority(PRIO_PROCESS, 0);
  out["herd_size"] = o.herd;
  json::object rate, cap, alone, overhead;
  for (int nodes : o.nodes) {
    if (nodes > 1 && o.pg.empty()) continue;  // a cluster needs PostgreSQL
    const std::string key = nodes == 1 ? "one_node" : "three_nodes";
    std::fprintf(stderr, "flows, %d node(s): the herd at %.0f/s\n", nodes, o.rate);
    rate[key] = RatePhase(o, nodes);
    if (o.rate_only) continue;
    std::fprintf(stderr, "flows, %d node(s): the herd at max_in_flight %lld\n", nodes,
                 static_cast<long long>(o.max_in_flight));
    cap[key] = CapPhase(o, nodes);
    std::fprintf(stderr, "flows, %d node(s): the second flow alone\n", nodes);
    alone[key] = SecondAlone(o, nodes);
    std::fprintf(stderr, "flows, %d node(s): overhead, off and on\n", nodes);
    overhead[key] = Overhead(o, nodes, nodes == 1 ? o.overhead_rounds : 1);
  }
  out["rate"] = std::move(rate);
  out["cap"] = std::move(cap);
  out["second_flow_alone"] = std::move(alone);
  out["overhead"] = std::move(overhead);
  if (o.rate_only) return out;
  std::fprintf(stderr, "flows: memory, %llu pending against %llu due behind 10/s\n",
               static_cast<unsigned long long>(o.memory_timers),
               static_cast<unsigned long long>(o.memory_timers));
  out["memory"] = MemoryPhase(o);
  return out;
}

}  // namespace tickwheel::bench
