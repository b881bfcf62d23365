// SPDX-License-Identifier: Apache-2.0
// What the server bench's phases share: clocks and CPU meters, request
// bodies, batch creation through the API, lateness statistics and
// duplicate counts.
#ifndef TICKWHEEL_BENCH_SERVER_BENCH_UTIL_H_
#define TICKWHEEL_BENCH_SERVER_BENCH_UTIL_H_

#include <sys/types.h>

#include <boost/json.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "support/server_process.h"
#include "support/webhook_receiver.h"

namespace tickwheel::bench {

// Wall clock, in ms since the epoch (what deliveries are stamped with).
std::int64_t NowMs();
// The machine's 1-minute load average.
double LoadAverage();
// CPU seconds (user + system) of this process, and of process `pid`.
double SelfCpuSeconds();
double ProcCpuSeconds(pid_t pid);
// Resident memory of process `pid` (VmRSS), in bytes; 0 if unknown.
std::size_t ProcRssBytes(pid_t pid);

// CPU used during a phase, in % of one core: this process (client and
// receiver), the whole machine, and the server `server` if given.
class CpuMeter {
 public:
  explicit CpuMeter(pid_t server = 0);
  // {wall_s, bench_cpu_pct, machine_cpu_pct[, server_cpu_pct]} since
  // construction.
  boost::json::object Stop() const;

 private:
  pid_t server_;
  std::chrono::steady_clock::time_point start_;
  double self_, machine_, server_cpu_;
};

// A POST /v1/timers body, and a POST /v1/timers:batch body of the timers
// prefix+from .. prefix+(from+n-1).
std::string Timer(const std::string& id, std::int64_t fire_at_ms,
                  const std::string& url);
std::string Batch(const std::string& prefix, std::uint64_t from,
                  std::uint64_t n,
                  const std::function<std::int64_t(std::uint64_t)>& fire_at,
                  const std::string& url);

// Creates timers prefix+0 .. prefix+(n-1) through the batch API of the
// server on 127.0.0.1:`port`, `per_batch` per request on `connections`
// connections; returns timers/s.
double CreateBatches(int port, const std::string& prefix, std::uint64_t n,
                     std::uint64_t per_batch, int connections,
                     const std::function<std::int64_t(std::uint64_t)>& fire_at,
                     const std::string& url);
inline double CreateBatches(
    const testing::ServerProcess& server, const std::string& prefix,
    std::uint64_t n, std::uint64_t per_batch, int connections,
    const std::function<std::int64_t(std::uint64_t)>& fire_at,
    const std::string& url) {
  return CreateBatches(server.port(), prefix, n, per_batch, connections,
                       fire_at, url);
}

// The value of an unlabelled metric in the /metrics of the server at
// `address` (host:port); -1 if absent or unreachable.
double Metric(const std::string& address, const std::string& name);

// {count, early, p50_ms, p99_ms, max_ms, first_to_last_ms} of received -
// due over `d`.
boost::json::object LatenessStats(const std::vector<testing::Delivery>& d);

// {distinct ids, deliveries beyond the first of each id} among `d`.
std::pair<std::size_t, std::size_t> Distinct(const std::vector<testing::Delivery>& d);

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_BENCH_SERVER_BENCH_UTIL_H_
