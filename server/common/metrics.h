// SPDX-License-Identifier: Apache-2.0
// The server's counters and histograms, and their Prometheus text form.
#ifndef TICKWHEEL_SERVER_COMMON_METRICS_H_
#define TICKWHEEL_SERVER_COMMON_METRICS_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tickwheel/internal/mutex.h"

namespace tickwheel::server {

// A histogram of millisecond values with fixed buckets (0.5 ms .. 60 s).
// Thread safety: Observe from any thread; lock-free.
class MsHistogram {
 public:
  static constexpr std::array<double, 16> kBounds = {
      0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000,
      30000, 60000};
  void Observe(double ms);
  // Appends the Prometheus lines for metric `name` (with `help`).
  void Render(std::string& out, const char* name, const char* help) const;
  // The smallest bucket bound with at least `q` of observations below it
  // (an upper bound on the quantile); +Inf as 1e300.
  double QuantileUpperBound(double q) const;

  // The observations per bucket so far (the last is over the last bound).
  using Buckets = std::array<std::uint64_t, kBounds.size() + 1>;
  Buckets Snapshot() const;
  // The `q` quantile of `buckets` (e.g. the difference of two snapshots),
  // interpolated linearly within its bucket as Prometheus'
  // histogram_quantile does; the last bound past it; 0 for no observation.
  static double Quantile(const Buckets& buckets, double q);

 private:
  std::array<std::atomic<std::uint64_t>, kBounds.size() + 1> buckets_{};
  std::atomic<std::uint64_t> count_{0};
  std::atomic<std::uint64_t> sum_us_{0};
};

// API requests answered, by route template and HTTP status code: the
// series of `tickwheel_http_requests_total{route="...",code="..."}`.
// Cardinality is bounded by the caller: `route` must be one of the API's
// route templates ("/v1/timers/{id}", never a raw path) or "other".
// Thread safety: any thread; one short lock per request.
class HttpRequestCounter {
 public:
  void Count(std::string_view route, int code) TW_EXCLUDES(mutex_);
  // The count of one series (0 if it never occurred).
  std::uint64_t Get(std::string_view route, int code) const TW_EXCLUDES(mutex_);
  void Render(std::string& out) const TW_EXCLUDES(mutex_);

 private:
  mutable internal::Mutex mutex_;
  // route -> code -> count
  std::map<std::string, std::map<int, std::uint64_t>, std::less<>> counts_ TW_GUARDED_BY(mutex_);
};

// Prometheus text-format helpers shared by every part that appends to
// /metrics: one # HELP and # TYPE per family. Conventions (docs/server.md,
// Metrics): counters end in _total, gauges do not; units are base units
// (_seconds, _bytes); timestamps end in _timestamp_seconds; a family
// spread over states or routes is one name with a label.
void AppendGaugeMetric(std::string& out, std::string_view name, std::string_view help, double v);
void AppendCounterMetric(std::string& out, std::string_view name, std::string_view help,
                         std::uint64_t v);
// One family with one label: `name{label="value"} v` for each pair.
void AppendLabeledGauge(std::string& out, std::string_view name, std::string_view help,
                        std::string_view label,
                        const std::vector<std::pair<std::string_view, double>>& values);

// Everything /metrics shows. Counters only go up.
struct Metrics {
  std::atomic<std::uint64_t> created{0};
  std::atomic<std::uint64_t> fired{0};  // attempts started
  std::atomic<std::uint64_t> delivered{0};
  std::atomic<std::uint64_t> retried{0};
  std::atomic<std::uint64_t> failed{0};  // became dead letters
  std::atomic<std::uint64_t> cancelled{0};
  std::atomic<std::uint64_t> rescheduled{0};
  // Attempts of timers found `delivering` (in flight when a process stopped).
  std::atomic<std::uint64_t> duplicates_after_recovery{0};
  // Attempts whose request was sent but whose answer never came (timeout,
  // connection lost): the receiver may have processed them.
  std::atomic<std::uint64_t> attempts_unanswered{0};
  std::atomic<std::uint64_t> fenced_writes{0};          // refused: shard not owned
  std::atomic<std::uint64_t> store_write_failures{0};   // claims/outcomes to write again
  std::atomic<std::uint64_t> waiting_for_nats{0};       // NATS timers left pending
  HttpRequestCounter http_requests;  // by route template and status code
  MsHistogram delivery_latency;  // request sent -> response read
  MsHistogram lateness;          // due time -> attempt claimed, less throttling (wall clock)
  MsHistogram throttled;         // attempts held back by their flow: how long
  MsHistogram store_write;       // one write (incl. waiting for the fsync)
  std::atomic<std::uint64_t> store_writes{0};     // atomic writes (groups)
  std::atomic<std::uint64_t> store_mutations{0};  // state changes in them

  // Schedules (server/schedule/): occurrences their planning created, that
  // fired (claimed for their first attempt), and that it skipped, by reason.
  std::atomic<std::uint64_t> occurrences_planned{0};
  std::atomic<std::uint64_t> occurrences_fired{0};
  std::atomic<std::uint64_t> occurrences_skipped_overlap{0};
  std::atomic<std::uint64_t> occurrences_skipped_catch_up{0};
  std::atomic<std::uint64_t> occurrences_skipped_dst{0};
  // Planning lag: from a planned occurrence's due time to the write that
  // claimed it and planned the next one.
  MsHistogram planning_lag;

  // Renders everything: tickwheel_build_info, the process_* metrics, the
  // counters and histograms here; `gauges` appends the live gauges
  // (timers by state, in window, ...) in Prometheus form.
  std::string Render(const std::function<void(std::string&)>& gauges) const;
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_COMMON_METRICS_H_
