// SPDX-License-Identifier: Apache-2.0
#include "common/metrics_series.h"

namespace tickwheel::server {

MetricsSeries::MetricsSeries(const Metrics& metrics, std::int64_t now_ms)
    : metrics_(metrics), last_ms_(now_ms), last_(Read()) {}

MetricsSeries::Totals MetricsSeries::Read() const {
  Totals t;
  t.created = metrics_.created.load(std::memory_order_relaxed);
  t.delivered = metrics_.delivered.load(std::memory_order_relaxed);
  t.retried = metrics_.retried.load(std::memory_order_relaxed);
  t.failed = metrics_.failed.load(std::memory_order_relaxed);
  t.lateness = metrics_.lateness.Snapshot();
  return t;
}

void MetricsSeries::Sample(std::int64_t now_ms) {
  const Totals now = Read();
  internal::MutexLock lock(mutex_);
  if (now_ms <= last_ms_) return;
  const double seconds = static_cast<double>(now_ms - last_ms_) / 1000.0;
  auto rate = [seconds](std::uint64_t later, std::uint64_t earlier) {
    return later >= earlier ? static_cast<double>(later - earlier) / seconds : 0.0;
  };
  Point p;
  p.end_ms = now_ms;
  p.created_per_s = rate(now.created, last_.created);
  p.delivered_per_s = rate(now.delivered, last_.delivered);
  p.retried_per_s = rate(now.retried, last_.retried);
  p.failed_per_s = rate(now.failed, last_.failed);
  MsHistogram::Buckets lateness{};
  for (std::size_t i = 0; i < lateness.size(); ++i) {
    lateness[i] = now.lateness[i] - last_.lateness[i];
    p.attempts += lateness[i];
  }
  p.lateness_p50_ms = MsHistogram::Quantile(lateness, 0.50);
  p.lateness_p99_ms = MsHistogram::Quantile(lateness, 0.99);
  points_.push_back(p);
  if (points_.size() > kBuckets) points_.pop_front();
  last_ = now;
  last_ms_ = now_ms;
}

std::vector<MetricsSeries::Point> MetricsSeries::Points() const {
  internal::MutexLock lock(mutex_);
  return {points_.begin(), points_.end()};
}

}  // namespace tickwheel::server
