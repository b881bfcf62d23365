// SPDX-License-Identifier: Apache-2.0
// The console's in-memory series: rates and lateness quantiles per bucket,
// an hour kept, driven by the times the test passes.
#include "common/metrics_series.h"

#include <gtest/gtest.h>

namespace tickwheel::server {
namespace {

constexpr std::int64_t kStart = 1'800'000'000'000;

TEST(MetricsSeriesTest, EachSampleClosesABucketOfRatesAndLateness) {
  Metrics metrics;
  MetricsSeries series(metrics, kStart);
  metrics.created.fetch_add(50);
  metrics.delivered.fetch_add(20);
  metrics.retried.fetch_add(10);
  for (int i = 0; i < 98; ++i) metrics.lateness.Observe(0.8);  // bucket (0.5, 1]
  metrics.lateness.Observe(40);                                  // (20, 50]
  metrics.lateness.Observe(40);
  series.Sample(kStart + 10'000);
  std::vector<MetricsSeries::Point> points = series.Points();
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(points[0].end_ms, kStart + 10'000);
  EXPECT_DOUBLE_EQ(points[0].created_per_s, 5);
  EXPECT_DOUBLE_EQ(points[0].delivered_per_s, 2);
  EXPECT_DOUBLE_EQ(points[0].retried_per_s, 1);
  EXPECT_EQ(points[0].attempts, 100u);
  EXPECT_GT(points[0].lateness_p50_ms, 0.5);
  EXPECT_LE(points[0].lateness_p50_ms, 1);
  EXPECT_GT(points[0].lateness_p99_ms, 20);
  EXPECT_LE(points[0].lateness_p99_ms, 50);

  // The next bucket sees only what happened in it.
  metrics.delivered.fetch_add(5);
  series.Sample(kStart + 15'000);
  points = series.Points();
  ASSERT_EQ(points.size(), 2u);
  EXPECT_DOUBLE_EQ(points[1].created_per_s, 0);
  EXPECT_DOUBLE_EQ(points[1].delivered_per_s, 1);
  EXPECT_EQ(points[1].attempts, 0u);
  EXPECT_DOUBLE_EQ(points[1].lateness_p99_ms, 0);
}

TEST(MetricsSeriesTest, KeepsTheLastHourAndIgnoresTimeGoingBack) {
  Metrics metrics;
  MetricsSeries series(metrics, kStart);
  for (std::size_t i = 1; i <= MetricsSeries::kBuckets + 10; ++i) {
    series.Sample(kStart + static_cast<std::int64_t>(i) * MetricsSeries::kBucketMs);
  }
  series.Sample(kStart);  // not after the last: ignored
  const std::vector<MetricsSeries::Point> points = series.Points();
  ASSERT_EQ(points.size(), MetricsSeries::kBuckets);
  EXPECT_EQ(points.front().end_ms, kStart + 11 * MetricsSeries::kBucketMs);
  EXPECT_EQ(points.back().end_ms,
            kStart + static_cast<std::int64_t>(MetricsSeries::kBuckets + 10) * MetricsSeries::kBucketMs);
}

TEST(MsHistogramTest, QuantilesInterpolateWithinTheirBucket) {
  MsHistogram::Buckets b{};
  EXPECT_EQ(MsHistogram::Quantile(b, 0.5), 0);
  b[3] = 10;  // (2, 5]
  EXPECT_DOUBLE_EQ(MsHistogram::Quantile(b, 0.5), 3.5);
  EXPECT_DOUBLE_EQ(MsHistogram::Quantile(b, 1.0), 5);
  b.back() = 10;  // past the last bound
  EXPECT_DOUBLE_EQ(MsHistogram::Quantile(b, 0.99), MsHistogram::kBounds.back());
}

}  // namespace
}  // namespace tickwheel::server
