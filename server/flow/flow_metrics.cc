// SPDX-License-Identifier: Apache-2.0
#include "flow/flow_metrics.h"

#include <algorithm>

namespace tickwheel::server {
namespace {

struct Sums {
  std::uint64_t sent = 0, delivered = 0, throttled = 0;
  std::int64_t in_flight = 0, backlog = 0;
  bool paused = false;
};

// A label value: '\', '"' and newlines escaped (flow keys have none, but
// the text format is kept whatever comes).
std::string Label(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

void Family(std::string& out, const char* name, const char* type, const char* help,
            const std::map<std::string, Sums>& by_label,
            std::uint64_t (*value)(const Sums&), bool configured_only = false) {
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  for (const auto& [label, sums] : by_label) {
    if (configured_only && label == "other") continue;
    out += std::string(name) + "{flow=\"" + Label(label) + "\"} " + std::to_string(value(sums)) +
           "\n";
  }
}

}  // namespace

void AppendFlowMetrics(std::string& out, const std::vector<FlowStats>& flows,
                       const FlowStats& retired,
                       const std::map<std::string, FlowSettings>& configured,
                       const std::map<std::string, std::int64_t>& stored_backlog) {
  std::map<std::string, Sums> by_label;
  for (const auto& [key, settings] : configured) by_label[key].paused = settings.paused;
  Sums& other = by_label["other"];
  other.sent = retired.sent_total;
  other.delivered = retired.delivered_total;
  other.throttled = retired.throttled_total;
  for (const FlowStats& f : flows) {
    Sums& s = configured.count(f.key) ? by_label[f.key] : by_label["other"];
    s.sent += f.sent_total;
    s.delivered += f.delivered_total;
    s.throttled += f.throttled_total;
    s.in_flight += f.in_flight;
    std::int64_t backlog = f.waiting;
    if (auto it = stored_backlog.find(f.key); it != stored_backlog.end() && f.deferred) {
      backlog = std::max(backlog, it->second - f.in_flight);
    }
    s.backlog += backlog;
  }
  Family(out, "tickwheel_flow_sent_total", "counter",
         "Attempts started, by flow (configured flows by key, the others summed as flow=other).",
         by_label, [](const Sums& s) { return s.sent; });
  Family(out, "tickwheel_flow_delivered_total", "counter", "Attempts answered 2xx, by flow.",
         by_label, [](const Sums& s) { return s.delivered; });
  Family(out, "tickwheel_flow_throttled_total", "counter",
         "Attempts that waited for their flow's limits (rate, in-flight cap, pause, Retry-After), "
         "by flow.",
         by_label, [](const Sums& s) { return s.throttled; });
  Family(out, "tickwheel_flow_in_flight", "gauge", "Attempts in flight on this node, by flow.",
         by_label, [](const Sums& s) { return static_cast<std::uint64_t>(s.in_flight); });
  Family(out, "tickwheel_flow_backlog", "gauge",
         "Due timers waiting for their flow on this node (in memory, and in the store beyond).",
         by_label, [](const Sums& s) { return static_cast<std::uint64_t>(std::max<std::int64_t>(0, s.backlog)); });
  Family(out, "tickwheel_flow_paused", "gauge", "1 while a configured flow is paused.", by_label,
         [](const Sums& s) -> std::uint64_t { return s.paused ? 1 : 0; },
         /*configured_only=*/true);
}

}  // namespace tickwheel::server
