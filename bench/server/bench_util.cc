// SPDX-License-Identifier: Apache-2.0
#include "bench_util.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include "cli/blocking_http_client.h"
#include "load_client.h"

namespace tickwheel::bench {

namespace json = boost::json;
using testing::Delivery;

namespace {

// Busy CPU seconds of the whole machine (all processes, all cores).
double MachineBusySeconds() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  double user, nice, system, idle, iowait, irq, softirq, steal;
  in >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >>
      steal;
  return (user + nice + system + irq + softirq + steal) /
         static_cast<double>(sysconf(_SC_CLK_TCK));
}

}  // namespace

std::int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

double LoadAverage() {
  double l = 0;
  std::ifstream("/proc/loadavg") >> l;
  return l;
}

double SelfCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

double ProcCpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(in, line);
  const std::size_t close = line.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(line.substr(close + 2));
  std::string field;
  double utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stod(field);
    if (i == 15) stime = std::stod(field);
  }
  return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

std::size_t ProcRssBytes(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  return 0;
}

CpuMeter::CpuMeter(pid_t server)
    : server_(server),
      start_(std::chrono::steady_clock::now()),
      self_(SelfCpuSeconds()),
      machine_(MachineBusySeconds()),
      server_cpu_(server ? ProcCpuSeconds(server) : 0) {}

json::object CpuMeter::Stop() const {
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_)
          .count();
  json::object o;
  o["wall_s"] = wall;
  o["bench_cpu_pct"] = 100 * (SelfCpuSeconds() - self_) / wall;
  o["machine_cpu_pct"] = 100 * (MachineBusySeconds() - machine_) / wall;
  if (server_)
    o["server_cpu_pct"] = 100 * (ProcCpuSeconds(server_) - server_cpu_) / wall;
  return o;
}

std::string Timer(const std::string& id, std::int64_t fire_at_ms,
                  const std::string& url) {
  return "{\"id\":\"" + id + "\",\"fire_at_ms\":" + std::to_string(fire_at_ms) +
         ",\"target\":{\"url\":\"" + url + "\"},\"payload\":{\"n\":1}}";
}

std::string Batch(const std::string& prefix, std::uint64_t from,
                  std::uint64_t n,
                  const std::function<std::int64_t(std::uint64_t)>& fire_at,
                  const std::string& url) {
  std::string body = "{\"timers\":[";
  body.reserve(n * 110);
  for (std::uint64_t i = from; i < from + n; ++i) {
    if (i > from) body += ',';
    body += Timer(prefix + std::to_string(i), fire_at(i), url);
  }
  return body + "]}";
}

double CreateBatches(int port, const std::string& prefix, std::uint64_t n,
                     std::uint64_t per_batch, int connections,
                     const std::function<std::int64_t(std::uint64_t)>& fire_at,
                     const std::string& url) {
  const std::uint64_t batches = (n + per_batch - 1) / per_batch;
  LoadResult r = RunLoad(
      "127.0.0.1", port, connections, batches, std::chrono::hours(1),
      "/v1/timers:batch",
      [&](std::uint64_t b) {
        return Batch(prefix, b * per_batch,
                     std::min(per_batch, n - b * per_batch), fire_at, url);
      },
      201);
  if (r.failed)
    std::fprintf(stderr, "  %llu batches failed\n",
                 static_cast<unsigned long long>(r.failed));
  return static_cast<double>(r.ok * per_batch) / r.seconds;
}

double Metric(const std::string& address, const std::string& name) {
  server::BlockingHttpClient client(address, std::chrono::seconds(5));
  const std::string text = client.Call("GET", "/metrics").body;
  const std::size_t at = text.find("\n" + name + " ");
  return at == std::string::npos ? -1
                                 : std::stod(text.substr(at + name.size() + 2));
}

json::object LatenessStats(const std::vector<Delivery>& d) {
  std::vector<std::int64_t> late;
  std::int64_t first = INT64_MAX, last = INT64_MIN, early = 0;
  for (const Delivery& x : d) {
    late.push_back(x.received_ms - x.fire_at_ms);
    if (x.received_ms < x.fire_at_ms) ++early;
    first = std::min(first, x.received_ms);
    last = std::max(last, x.received_ms);
  }
  std::sort(late.begin(), late.end());
  json::object o;
  o["count"] = late.size();
  o["early"] = early;
  if (!late.empty()) {
    o["p50_ms"] = late[late.size() / 2];
    o["p99_ms"] = late[late.size() * 99 / 100];
    o["max_ms"] = late.back();
    o["first_to_last_ms"] = last - first;
  }
  return o;
}

std::pair<std::size_t, std::size_t> Distinct(const std::vector<Delivery>& d) {
  std::set<std::string> ids;
  for (const Delivery& x : d) ids.insert(x.id);
  return {ids.size(), d.size() - ids.size()};
}

}  // namespace tickwheel::bench
