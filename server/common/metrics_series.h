// SPDX-License-Identifier: Apache-2.0
// MetricsSeries: the last hour of the server's rates and lateness in fixed
// buckets, kept in memory, so the web console can chart them without a
// Prometheus (GET /v1/stats/series).
#ifndef TICKWHEEL_SERVER_COMMON_METRICS_SERIES_H_
#define TICKWHEEL_SERVER_COMMON_METRICS_SERIES_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "common/metrics.h"
#include "tickwheel/internal/mutex.h"

namespace tickwheel::server {

// Each Sample closes a bucket: the counters' growth since the previous
// Sample, as rates per second, and the lateness quantiles of the attempts
// claimed in between. The caller samples every kBucketMs (a periodic
// thread in the server; tests call Sample with the times they choose).
//
// Thread safety: Sample and Points from any thread.
// Memory: kBuckets points (about 20 KiB).
//
//   MetricsSeries series(metrics, clock.WallMs());
//   series.Sample(clock.WallMs());          // every kBucketMs
//   for (const auto& p : series.Points()) Plot(p.end_ms, p.delivered_per_s);
class MetricsSeries {
 public:
  static constexpr std::int64_t kBucketMs = 10'000;
  static constexpr std::size_t kBuckets = 360;  // an hour

  struct Point {
    std::int64_t end_ms = 0;       // the bucket is (previous end_ms, end_ms]
    double created_per_s = 0;      // timers created
    double delivered_per_s = 0;    // timers delivered (2xx)
    double retried_per_s = 0;      // failed attempts scheduled for a retry
    double failed_per_s = 0;       // timers that became dead letters
    double lateness_p50_ms = 0;    // of the attempts claimed in the bucket
    double lateness_p99_ms = 0;
    std::uint64_t attempts = 0;    // attempts claimed in the bucket
  };

  // `metrics` must outlive this; `now_ms` starts the first bucket.
  MetricsSeries(const Metrics& metrics, std::int64_t now_ms);

  // Closes the bucket ending at `now_ms`. A call no later than the previous
  // one is ignored.
  void Sample(std::int64_t now_ms) TW_EXCLUDES(mutex_);

  // The closed buckets, oldest first, at most kBuckets.
  std::vector<Point> Points() const TW_EXCLUDES(mutex_);

 private:
  struct Totals {
    std::uint64_t created = 0, delivered = 0, retried = 0, failed = 0;
    MsHistogram::Buckets lateness{};
  };
  Totals Read() const;

  const Metrics& metrics_;
  mutable internal::Mutex mutex_;
  std::int64_t last_ms_ TW_GUARDED_BY(mutex_);
  Totals last_ TW_GUARDED_BY(mutex_);
  std::deque<Point> points_ TW_GUARDED_BY(mutex_);
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_COMMON_METRICS_SERIES_H_
