// SPDX-License-Identifier: Apache-2.0
#include "schedule_phases.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "bench_cluster.h"
#include "bench_util.h"
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

constexpr char kNowhere[] = "http://127.0.0.1:9/x";  // creates that never come due

void SleepUntil(std::int64_t unix_ms) {
  const std::int64_t now = NowMs();
  if (unix_ms > now) std::this_thread::sleep_for(std::chrono::milliseconds(unix_ms - now));
}

// The server under test: one embedded process, or a cluster of 3 nodes on
// a fresh database.
class Deployment {
 public:
  Deployment(const SchedulePhaseOptions& o, bool cluster, const std::string& name,
             const std::string& dir) {
    if (cluster) {
      cluster_ = std::make_unique<BenchCluster>(o.binary, o.pg, o.shards, name, 3);
    } else {
      data_ = dir + "/" + name;
      embedded_ = std::make_unique<ServerProcess>(o.binary, data_,
                                                  std::vector<std::string>{"--max-batch", "10000"});
      if (!embedded_->Start()) std::exit(1);
    }
  }
  ~Deployment() {
    const std::int64_t t = NowMs();
    if (embedded_) {
      embedded_->Terminate(60);
      embedded_.reset();
      std::filesystem::remove_all(data_);
    }
    cluster_.reset();
    std::fprintf(stderr, "  stopped in %.1f s\n", static_cast<double>(NowMs() - t) / 1000);
  }

  int size() const { return cluster_ ? cluster_->size() : 1; }
  ServerProcess& node(int i) { return cluster_ ? cluster_->node(i) : *embedded_; }

  // Resident memory of every node, together.
  double RssBytes() {
    double total = 0;
    for (int i = 0; i < size(); ++i) total += static_cast<double>(ProcRssBytes(node(i).pid()));
    return total;
  }
  // The store on disk: the data directory, or the cluster's database.
  double StoreBytes() {
    if (cluster_) return cluster_->DatabaseBytes();
    double bytes = 0;
    for (const auto& f : std::filesystem::recursive_directory_iterator(data_)) {
      if (f.is_regular_file()) bytes += static_cast<double>(f.file_size());
    }
    return bytes;
  }
  // Server CPU (every node) over a span: Start, then Stop.
  void StartCpu() {
    meters_.clear();
    for (int i = 0; i < size(); ++i) meters_.emplace_back(node(i).pid());
  }
  json::object StopCpu() const { return BenchCluster::Stop(meters_); }

  // `total` POSTs of body(k) to `target`, k = 0..total-1, on `connections`
  // connections spread over the nodes, for at most `duration`.
  LoadResult Post(int connections, std::uint64_t total, std::chrono::milliseconds duration,
                  const std::string& target,
                  const std::function<std::string(std::uint64_t)>& body, int expected) {
    std::vector<LoadResult> results(static_cast<std::size_t>(size()));
    std::vector<std::thread> threads;
    const auto start = std::chrono::steady_clock::now();
    std::uint64_t offset = 0;
    for (int i = 0; i < size(); ++i) {
      const std::uint64_t share = total == UINT64_MAX ? total : ShareOf(total, size(), i);
      const int conns = static_cast<int>(ShareOf(static_cast<std::uint64_t>(connections), size(), i));
      // Without a total, each node's keys get a range of their own.
      const std::uint64_t from = total == UINT64_MAX ? static_cast<std::uint64_t>(i) << 40 : offset;
      threads.emplace_back([&, i, share, conns, from] {
        results[static_cast<std::size_t>(i)] =
            RunLoad("127.0.0.1", node(i).port(), conns, share, duration, target,
                    [&, from](std::uint64_t k) { return body(from + k); }, expected);
      });
      if (total != UINT64_MAX) offset += share;
    }
    for (auto& t : threads) t.join();
    LoadResult all;
    for (const LoadResult& r : results) {
      all.ok += r.ok;
      all.failed += r.failed;
    }
    all.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return all;
  }

  // Timers prefix+k, k = 0..n-1, due at fire_at(k), through the batch API
  // (1,000 per request; 4 connections, or 2 per node); timers/s.
  double CreateTimers(const std::string& prefix, std::uint64_t n,
                      const std::function<std::int64_t(std::uint64_t)>& fire_at,
                      const std::string& url) {
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> threads;
    std::uint64_t offset = 0;
    for (int i = 0; i < size(); ++i) {
      const std::uint64_t share = ShareOf(n, size(), i);
      threads.emplace_back([&, i, share, offset] {
        CreateBatches(node(i), prefix + std::to_string(i) + "-", share, 1000, size() == 1 ? 4 : 2,
                      [&, offset](std::uint64_t k) { return fire_at(offset + k); }, url);
      });
      offset += share;
    }
    for (auto& t : threads) t.join();
    return static_cast<double>(n) /
           std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

 private:
  std::string data_;
  std::unique_ptr<ServerProcess> embedded_;
  std::unique_ptr<BenchCluster> cluster_;
  std::vector<CpuMeter> meters_;
};

// What the receiver got: (due, received) of each delivery.
class Arrivals {
 public:
  void Add(std::int64_t due, std::int64_t received) {
    std::lock_guard lock(mutex_);
    seen_.emplace_back(due, received);
  }
  std::vector<std::pair<std::int64_t, std::int64_t>> Snapshot() const {
    std::lock_guard lock(mutex_);
    return seen_;
  }
  // How many were due in [from, to).
  std::uint64_t DueIn(std::int64_t from, std::int64_t to) const {
    std::lock_guard lock(mutex_);
    return static_cast<std::uint64_t>(std::count_if(
        seen_.begin(), seen_.end(), [&](const auto& x) { return x.first >= from && x.first < to; }));
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::pair<std::int64_t, std::int64_t>> seen_;
};

// The period [from, to) in which `expected` deliveries are due: measured
// while it runs (server CPU), then judged once they all arrived (or 60 s
// after its end).
json::object Firing(Deployment& d, const Arrivals& arrivals, std::int64_t from, std::int64_t to,
                    std::uint64_t expected) {
  SleepUntil(from);
  d.StartCpu();
  SleepUntil(to);
  json::object cpu = d.StopCpu();
  for (int i = 0; i < 600 && arrivals.DueIn(from, to) < expected; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::vector<std::int64_t> late;
  std::uint64_t received_in = 0, early = 0;
  for (const auto& [due, received] : arrivals.Snapshot()) {
    if (received >= from && received < to) ++received_in;
    if (due < from || due >= to) continue;
    late.push_back(received - due);
    if (received < due) ++early;
  }
  std::sort(late.begin(), late.end());
  const double seconds = static_cast<double>(to - from) / 1000.0;
  json::object r;
  r["expected"] = expected;
  r["delivered"] = late.size();  // of those due in the period
  r["missing"] = expected - std::min<std::uint64_t>(expected, late.size());
  r["early"] = early;
  r["received_in_period"] = received_in;
  r["per_s"] = static_cast<double>(received_in) / seconds;
  if (!late.empty()) {
    r["p50_ms"] = late[late.size() / 2];
    r["p99_ms"] = late[late.size() * 99 / 100];
    r["max_ms"] = late.back();
  }
  const double per = std::max<double>(1.0, static_cast<double>(received_in));
  r["server_cpu_pct"] = cpu.at("server_cpu_pct");
  r["machine_cpu_pct"] = cpu.at("machine_cpu_pct");
  r["bench_cpu_pct"] = cpu.at("bench_cpu_pct");
  r["server_cpu_us_per_delivery"] = cpu.at("server_cpu_pct").as_double() / 100 * seconds * 1e6 / per;
  r["machine_cpu_us_per_delivery"] =
      cpu.at("machine_cpu_pct").as_double() / 100 * seconds * 1e6 / per;
  return r;
}

std::string ScheduleBody(const std::string& id, std::int64_t every_ms, std::int64_t anchor_ms,
                         std::int64_t start_ms, const std::string& url, std::size_t pad = 0) {
  return "{\"id\":\"" + id + "\",\"every_ms\":" + std::to_string(every_ms) +
         ",\"anchor_ms\":" + std::to_string(anchor_ms) + ",\"start_ms\":" +
         std::to_string(start_ms) + ",\"target\":{\"url\":\"" + url +
         "\"},\"payload\":{\"n\":1" +
         (pad > 0 ? ",\"pad\":\"" + std::string(pad, 'x') + "\"" : std::string()) + "}}";
}

json::object RunSchedules(const SchedulePhaseOptions& o, bool cluster, const std::string& dir) {
  const std::string name = cluster ? "cluster 3 nodes" : "embedded";
  Arrivals arrivals;
  WebhookReceiver receiver(testing::ReceiverOptions{1, false});
  receiver.SetPolicy([&](const Delivery& d) {
    arrivals.Add(d.fire_at_ms, d.received_ms);
    return 200;
  });
  Deployment d(o, cluster, "schedules", dir);
  const std::uint64_t n = o.schedules;
  const auto forever = std::chrono::hours(24);
  json::object r;
  // Single creates of timers due tomorrow, on the same server just before
  // the schedules' creates, the same way: their peer.
  std::fprintf(stderr, "schedules (%s): timer creates for %.0f s, for comparison\n", name.c_str(),
               o.timer_create_seconds);
  const std::int64_t tomorrow = NowMs() + 86'400'000;
  d.StartCpu();
  LoadResult t = d.Post(o.connections, UINT64_MAX,
                        std::chrono::milliseconds(static_cast<int>(o.timer_create_seconds * 1000)),
                        "/v1/timers",
                        [&](std::uint64_t k) { return Timer("t" + std::to_string(k), tomorrow, kNowhere); },
                        201);
  json::object timer_cpu = d.StopCpu();
  json::object timer_create;
  timer_create["created"] = t.ok;
  timer_create["failed"] = t.failed;
  timer_create["per_s"] = static_cast<double>(t.ok) / t.seconds;
  timer_create["server_cpu_us_per_create"] = timer_cpu.at("server_cpu_pct").as_double() / 100 *
                                             t.seconds * 1e6 / std::max(1.0, static_cast<double>(t.ok));
  r["timer_create"] = std::move(timer_create);
  const double rss0 = d.RssBytes(), store0 = d.StoreBytes();
  // The probe: schedules that start tomorrow, for the create rate.
  const std::uint64_t probe = std::clamp<std::uint64_t>(n / 50, 200, 5000);
  std::fprintf(stderr, "schedules (%s): a probe of %llu creates\n", name.c_str(),
               static_cast<unsigned long long>(probe));
  LoadResult p = d.Post(o.connections, probe, forever, "/v1/schedules",
                        [&](std::uint64_t k) {
                          return ScheduleBody("p" + std::to_string(k), o.every_ms, 0, tomorrow,
                                              kNowhere);
                        },
                        201);
  const double probe_rate = static_cast<double>(p.ok) / p.seconds;
  // Start once every one exists, with a margin: on the cluster the probe's
  // rate was about 3 times the rate of a long run of creates (772/s against
  // 2,190/s with 20,000 schedules).
  const double margin = cluster ? 3.0 : 1.5;
  std::int64_t start = NowMs() +
                       static_cast<std::int64_t>(margin * 1000 * static_cast<double>(n) /
                                                 std::max(1.0, probe_rate)) +
                       15'000;
  start -= start % 1000;
  std::fprintf(stderr, "schedules (%s): %llu creates at about %.0f/s, starting at +%.0f s\n",
               name.c_str(), static_cast<unsigned long long>(n), probe_rate,
               static_cast<double>(start - NowMs()) / 1000);
  d.StartCpu();
  LoadResult c = d.Post(o.connections, n, forever, "/v1/schedules",
                        [&](std::uint64_t k) {
                          const auto anchor = static_cast<std::int64_t>(
                              static_cast<double>(k) * static_cast<double>(o.every_ms) /
                              static_cast<double>(n));
                          return ScheduleBody("s" + std::to_string(k), o.every_ms, anchor, start,
                                              receiver.url(), o.payload_pad);
                        },
                        201);
  json::object cpu = d.StopCpu();
  json::object create;
  create["created"] = c.ok;
  create["failed"] = c.failed + p.failed;
  create["seconds"] = c.seconds;
  create["per_s"] = static_cast<double>(c.ok) / c.seconds;
  create["server_cpu_pct"] = cpu.at("server_cpu_pct");
  create["machine_cpu_pct"] = cpu.at("machine_cpu_pct");
  create["server_cpu_us_per_create"] = cpu.at("server_cpu_pct").as_double() / 100 * c.seconds *
                                       1e6 / std::max(1.0, static_cast<double>(c.ok));
  create["probe_per_s"] = probe_rate;
  create["fired_during_create"] = NowMs() > start;
  r["create"] = std::move(create);
  std::this_thread::sleep_for(std::chrono::seconds(2));  // the last writes settle
  json::object memory;
  memory["schedules"] = n + probe;
  memory["rss_bytes_before"] = rss0;
  memory["rss_bytes_after"] = d.RssBytes();
  memory["rss_bytes_per_schedule"] =
      (memory["rss_bytes_after"].as_double() - rss0) / static_cast<double>(n + probe);
  memory["store_bytes_per_schedule"] =
      (d.StoreBytes() - store0) / static_cast<double>(n + probe);
  r["memory"] = std::move(memory);
  if (NowMs() > start) {
    std::fprintf(stderr, "  warning: creating took longer than planned; measuring the next period\n");
    start += ((NowMs() - start) / o.every_ms + 1) * o.every_ms;
  }
  std::fprintf(stderr, "schedules (%s): one period of %lld s from +%.0f s\n", name.c_str(),
               static_cast<long long>(o.every_ms / 1000),
               static_cast<double>(start - NowMs()) / 1000);
  r["firing"] = Firing(d, arrivals, start, start + o.every_ms, n);
  return r;
}

// `n` timers due evenly over [due_from, due_from + period), created through
// the batch API in kSlices slices over the period before it, each slice
// when its time comes: what a client that re-creates its one-shot timers
// every period sends instead of keeping a schedule.
void CreatePaced(Deployment& d, std::uint64_t n, std::int64_t due_from, std::int64_t period,
                 const std::string& url) {
  constexpr std::uint64_t kSlices = 60;
  for (std::uint64_t j = 0; j < kSlices; ++j) {
    SleepUntil(due_from - period +
               static_cast<std::int64_t>(static_cast<std::uint64_t>(period) * j / kSlices));
    const std::uint64_t first = n * j / kSlices, end = n * (j + 1) / kSlices;
    std::string prefix = "c";
    prefix += std::to_string(j);
    d.CreateTimers(prefix + "-", end - first,
                   [&](std::uint64_t k) {
                     return due_from + static_cast<std::int64_t>(
                                           static_cast<double>(first + k) *
                                           static_cast<double>(period) / static_cast<double>(n));
                   },
                   url);
  }
}

// The peer: n one-shot timers due in each of two periods, at the
// schedules' rate, on a fresh deployment (the second period's fire while n
// more are created, CreatePaced).
json::object RunOneShots(const SchedulePhaseOptions& o, bool cluster, const std::string& dir) {
  const std::string name = cluster ? "cluster 3 nodes" : "embedded";
  Arrivals arrivals;
  WebhookReceiver receiver(testing::ReceiverOptions{1, false});
  receiver.SetPolicy([&](const Delivery& d) {
    arrivals.Add(d.fire_at_ms, d.received_ms);
    return 200;
  });
  Deployment d(o, cluster, "oneshots", dir);
  const std::uint64_t n = o.schedules;
  json::object r;
  const double rss0 = d.RssBytes(), store0 = d.StoreBytes();
  // Two periods' worth, `n` due in each, from once they surely exist
  // (batches at 20 k/s at the least): the first period measures deliveries
  // alone; in the second, `n` more are created for a third period while
  // the second's fire (the steady state of a client that re-creates them).
  std::int64_t start =
      NowMs() + static_cast<std::int64_t>(static_cast<double>(2 * n) / 20.0) + 10'000;
  start -= start % 1000;
  std::fprintf(stderr, "one-shot timers (%s): %llu due over %lld s from +%.0f s\n", name.c_str(),
               static_cast<unsigned long long>(n), static_cast<long long>(o.every_ms / 1000),
               static_cast<double>(start - NowMs()) / 1000);
  d.StartCpu();
  const double rate = d.CreateTimers("o", 2 * n,
                                     [&](std::uint64_t k) {
                                       return start + static_cast<std::int64_t>(
                                                          static_cast<double>(k) *
                                                          static_cast<double>(o.every_ms) /
                                                          static_cast<double>(n));
                                     },
                                     receiver.url());
  json::object cpu = d.StopCpu();
  r["batch_create_per_s"] = rate;
  // A one-shot timer's whole cost is its create and its delivery: what a
  // client that created one each period would spend instead of a schedule.
  r["batch_create_server_cpu_us"] =
      cpu.at("server_cpu_pct").as_double() / 100 * 1e6 / std::max(1.0, rate);
  r["fired_during_create"] = NowMs() > start;
  std::this_thread::sleep_for(std::chrono::seconds(2));
  json::object memory;
  memory["rss_bytes_per_timer"] = (d.RssBytes() - rss0) / static_cast<double>(2 * n);
  memory["store_bytes_per_timer"] = (d.StoreBytes() - store0) / static_cast<double>(2 * n);
  r["memory"] = std::move(memory);
  r["firing"] = Firing(d, arrivals, start, start + o.every_ms, n);
  // Its server CPU per delivery holds a create too, made under the same
  // load: a one-shot timer's whole life, compactions included.
  std::thread creates(
      [&] { CreatePaced(d, n, start + 2 * o.every_ms, o.every_ms, receiver.url()); });
  r["steady"] = Firing(d, arrivals, start + o.every_ms, start + 2 * o.every_ms, n);
  creates.join();
  return r;
}

}  // namespace

json::object RunSchedulePhases(const SchedulePhaseOptions& o) {
  json::object out;
  out["load_average_start"] = LoadAverage();
  out["schedules"] = o.schedules;
  out["every_ms"] = o.every_ms;
  out["payload_pad"] = o.payload_pad;
  out["connections"] = o.connections;
  TempDir dir;
  std::vector<bool> deployments = {false};
  if (!o.pg.empty()) deployments.push_back(true);
  for (bool cluster : deployments) {
    SchedulePhaseOptions sized = o;
    if (cluster && o.cluster_schedules > 0) sized.schedules = o.cluster_schedules;
    json::object x;
    x["size"] = sized.schedules;
    x["schedules"] = RunSchedules(sized, cluster, dir.path());
    x["one_shot"] = RunOneShots(sized, cluster, dir.path());
    x["load_average"] = LoadAverage();
    out[cluster ? "cluster3" : "embedded"] = std::move(x);
  }
  out["load_average_end"] = LoadAverage();
  return out;
}

}  // namespace tickwheel::bench
