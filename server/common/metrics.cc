// SPDX-License-Identifier: Apache-2.0
#include "common/metrics.h"

#include <cmath>
#include <cstdio>
#include <utility>
#include <vector>

#include "common/process_metrics.h"

#ifndef TICKWHEEL_VERSION
#define TICKWHEEL_VERSION "unknown"
#endif

namespace tickwheel::server {

void MsHistogram::Observe(double ms) {
  std::size_t i = 0;
  while (i < kBounds.size() && ms > kBounds[i]) ++i;
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  sum_us_.fetch_add(static_cast<std::uint64_t>(ms < 0 ? 0 : ms * 1000),
                    std::memory_order_relaxed);
}

void MsHistogram::Render(std::string& out, const char* name,
                         const char* help) const {
  char line[256];
  std::snprintf(line, sizeof line, "# HELP %s %s\n# TYPE %s histogram\n", name,
                help, name);
  out += line;
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < kBounds.size(); ++i) {
    cumulative += buckets_[i].load(std::memory_order_relaxed);
    std::snprintf(line, sizeof line, "%s_bucket{le=\"%g\"} %llu\n", name,
                  kBounds[i] / 1000.0,
                  static_cast<unsigned long long>(cumulative));
    out += line;
  }
  cumulative += buckets_[kBounds.size()].load(std::memory_order_relaxed);
  std::snprintf(line, sizeof line,
                "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.6f\n%s_count %llu\n",
                name, static_cast<unsigned long long>(cumulative), name,
                static_cast<double>(sum_us_.load()) / 1e6, name,
                static_cast<unsigned long long>(count_.load()));
  out += line;
}

double MsHistogram::QuantileUpperBound(double q) const {
  const double total = static_cast<double>(count_.load());
  if (total == 0) return 0;
  double cumulative = 0;
  for (std::size_t i = 0; i < kBounds.size(); ++i) {
    cumulative += static_cast<double>(buckets_[i].load());
    if (cumulative >= q * total) return kBounds[i];
  }
  return 1e300;
}

MsHistogram::Buckets MsHistogram::Snapshot() const {
  Buckets out;
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = buckets_[i].load(std::memory_order_relaxed);
  return out;
}

double MsHistogram::Quantile(const Buckets& buckets, double q) {
  double total = 0;
  for (std::uint64_t n : buckets) total += static_cast<double>(n);
  if (total == 0) return 0;
  const double rank = q * total;
  double below = 0;
  for (std::size_t i = 0; i < kBounds.size(); ++i) {
    const double n = static_cast<double>(buckets[i]);
    if (n > 0 && below + n >= rank) {
      const double lower = i == 0 ? 0 : kBounds[i - 1];
      return lower + (kBounds[i] - lower) * (rank - below) / n;
    }
    below += n;
  }
  return kBounds.back();
}

void HttpRequestCounter::Count(std::string_view route, int code) {
  internal::MutexLock lock(mutex_);
  auto it = counts_.find(route);
  if (it == counts_.end()) it = counts_.emplace(std::string(route), std::map<int, std::uint64_t>()).first;
  ++it->second[code];
}

std::uint64_t HttpRequestCounter::Get(std::string_view route, int code) const {
  internal::MutexLock lock(mutex_);
  auto it = counts_.find(route);
  if (it == counts_.end()) return 0;
  auto n = it->second.find(code);
  return n == it->second.end() ? 0 : n->second;
}

void HttpRequestCounter::Render(std::string& out) const {
  out += "# HELP tickwheel_http_requests_total API requests answered, by route template and "
         "HTTP status code.\n# TYPE tickwheel_http_requests_total counter\n";
  internal::MutexLock lock(mutex_);
  for (const auto& [route, codes] : counts_) {
    for (const auto& [code, n] : codes) {
      out += "tickwheel_http_requests_total{route=\"" + route + "\",code=\"" +
             std::to_string(code) + "\"} " + std::to_string(n) + "\n";
    }
  }
}

void AppendGaugeMetric(std::string& out, std::string_view name, std::string_view help,
                       double v) {
  char value[32];
  if (std::isnan(v)) {
    std::snprintf(value, sizeof value, "NaN");  // as the text format spells it
  } else {
    std::snprintf(value, sizeof value, "%.17g", v);
  }
  out.append("# HELP ").append(name).append(" ").append(help).append("\n# TYPE ");
  out.append(name).append(" gauge\n").append(name).append(" ").append(value).append("\n");
}

void AppendCounterMetric(std::string& out, std::string_view name, std::string_view help,
                         std::uint64_t v) {
  out.append("# HELP ").append(name).append(" ").append(help).append("\n# TYPE ");
  out.append(name).append(" counter\n").append(name).append(" ");
  out.append(std::to_string(v)).append("\n");
}

void AppendLabeledGauge(std::string& out, std::string_view name, std::string_view help,
                        std::string_view label,
                        const std::vector<std::pair<std::string_view, double>>& values) {
  out.append("# HELP ").append(name).append(" ").append(help).append("\n# TYPE ");
  out.append(name).append(" gauge\n");
  for (const auto& [label_value, v] : values) {
    char value[32];
    std::snprintf(value, sizeof value, "%.17g", v);
    out.append(name).append("{").append(label).append("=\"").append(label_value);
    out.append("\"} ").append(value).append("\n");
  }
}

namespace {
void Counter(std::string& out, const char* name, const char* help,
             std::uint64_t value) {
  AppendCounterMetric(out, name, help, value);
}

// A counter with one label: HELP and TYPE once, then a series per value.
void LabeledCounter(std::string& out, const char* name, const char* help, const char* label,
                    const std::vector<std::pair<const char*, std::uint64_t>>& values) {
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " counter\n";
  for (const auto& [value, n] : values) {
    out += std::string(name) + "{" + label + "=\"" + value + "\"} " + std::to_string(n) + "\n";
  }
}
}  // namespace

std::string Metrics::Render(
    const std::function<void(std::string&)>& gauges) const {
  std::string out;
  out += "# HELP tickwheel_build_info The running build: its version in a label; always 1.\n"
         "# TYPE tickwheel_build_info gauge\n"
         "tickwheel_build_info{version=\"" TICKWHEEL_VERSION "\"} 1\n";
  AppendProcessMetrics(out);
  gauges(out);
  Counter(out, "tickwheel_timers_created_total", "Timers created (acknowledged durable).", created);
  Counter(out, "tickwheel_timers_fired_total", "Delivery attempts started.", fired);
  Counter(out, "tickwheel_timers_delivered_total", "Timers delivered (2xx).", delivered);
  Counter(out, "tickwheel_timers_retried_total", "Failed attempts scheduled for a retry.", retried);
  Counter(out, "tickwheel_timers_failed_total", "Timers that became dead letters.", failed);
  Counter(out, "tickwheel_timers_cancelled_total", "Timers cancelled.", cancelled);
  Counter(out, "tickwheel_timers_rescheduled_total", "Timers rescheduled.", rescheduled);
  Counter(out, "tickwheel_duplicates_after_recovery_total",
          "Attempts of timers that were in flight when the previous process stopped (possible duplicates).",
          duplicates_after_recovery);
  Counter(out, "tickwheel_attempts_unanswered_total",
          "Attempts sent whose answer never came (timeout, connection lost): their retry may be a duplicate.",
          attempts_unanswered);
  Counter(out, "tickwheel_fenced_writes_total",
          "Claims and outcomes refused because this node no longer owned the shard.", fenced_writes);
  Counter(out, "tickwheel_store_write_failures_total",
          "Claims and outcomes the store could not write (written again after a pause).",
          store_write_failures);
  Counter(out, "tickwheel_timers_waiting_for_nats_total",
          "Due timers with a NATS target left pending because this server runs without --nats.",
          waiting_for_nats);
  http_requests.Render(out);
  Counter(out, "tickwheel_store_writes_total", "Atomic store writes (group commits).", store_writes);
  Counter(out, "tickwheel_store_mutations_total", "State changes written (creates, claims, outcomes, ...).", store_mutations);
  Counter(out, "tickwheel_schedule_occurrences_planned_total",
          "Occurrences the schedules' planning put in the store (the next one, catch-ups).",
          occurrences_planned);
  Counter(out, "tickwheel_schedule_occurrences_fired_total",
          "Occurrences claimed for their first attempt.", occurrences_fired);
  LabeledCounter(out, "tickwheel_schedule_occurrences_skipped_total",
                 "Times of schedules not fired, by reason (overlap and catch-up policies, DST gap "
                 "under dst_gap skip).",
                 "reason",
                 {{"overlap", occurrences_skipped_overlap.load()},
                  {"catch_up", occurrences_skipped_catch_up.load()},
                  {"dst", occurrences_skipped_dst.load()}});
  delivery_latency.Render(out, "tickwheel_delivery_latency_seconds",
                          "Webhook request sent to response read.");
  lateness.Render(out, "tickwheel_lateness_seconds",
                  "Due time to the start of the attempt (wall clock), less what the timer's flow held it back.");
  throttled.Render(out, "tickwheel_flow_throttled_seconds",
                   "How long attempts held back by their flow's limits waited (rate, in-flight cap, pause, Retry-After hold).");
  store_write.Render(out, "tickwheel_store_write_seconds",
                     "One store write, waiting for its (shared) fsync included.");
  planning_lag.Render(out, "tickwheel_schedule_planning_lag_seconds",
                      "A planned occurrence's due time to the write that claimed it and planned the next.");
  return out;
}

}  // namespace tickwheel::server
