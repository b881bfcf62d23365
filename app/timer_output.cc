// SPDX-License-Identifier: Apache-2.0
#include "timer_output.h"

#include <cstdio>

#include "time_flag.h"

namespace tickwheel::app {

namespace json = boost::json;

namespace {

std::string Str(const json::object& o, const char* key) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr) return "";
  if (v->is_string()) return std::string(v->as_string());
  return json::serialize(*v);
}

std::string Target(const json::object& t) {
  const json::object& target = t.at("target").as_object();
  return target.contains("nats") ? "nats:" + Str(target, "nats") : Str(target, "url");
}

}  // namespace

std::string FormatTimeAndDelta(std::int64_t ms, std::int64_t now_ms) {
  const std::int64_t delta = ms - now_ms;
  const double abs_ms = static_cast<double>(delta < 0 ? -delta : delta);
  char rel[32];
  if (abs_ms < 1000) {
    std::snprintf(rel, sizeof rel, "%.0fms", abs_ms);
  } else if (abs_ms < 120e3) {
    std::snprintf(rel, sizeof rel, "%.1fs", abs_ms / 1e3);
  } else if (abs_ms < 7200e3) {
    std::snprintf(rel, sizeof rel, "%.0fm", abs_ms / 60e3);
  } else if (abs_ms < 172800e3) {
    std::snprintf(rel, sizeof rel, "%.1fh", abs_ms / 3600e3);
  } else {
    std::snprintf(rel, sizeof rel, "%.1fd", abs_ms / 86400e3);
  }
  return FormatRfc3339(ms) + " (" + (delta < 0 ? "" : "in ") + rel + (delta < 0 ? " ago" : "") +
         ")";
}

void PrintTimer(const json::object& t, std::int64_t now_ms) {
  const std::string state = Str(t, "state");
  const bool waiting = state == "pending" || state == "delivering";
  const std::int64_t fire_at = t.at("fire_at_ms").as_int64();
  std::printf("id:         %s\n", Str(t, "id").c_str());
  std::printf("state:      %s\n", state.c_str());
  std::printf("fire at:    %s\n",
              (waiting ? FormatTimeAndDelta(fire_at, now_ms) : FormatRfc3339(fire_at)).c_str());
  if (waiting && t.contains("next_attempt_ms") && t.at("attempts").as_int64() > 0) {
    std::printf("next try:   %s\n",
                FormatTimeAndDelta(t.at("next_attempt_ms").as_int64(), now_ms).c_str());
  }
  std::printf("attempts:   %lld of %s\n", static_cast<long long>(t.at("attempts").as_int64()),
              Str(t.at("retry").as_object(), "max_attempts").c_str());
  std::printf("target:     %s\n", Target(t).c_str());
  std::printf("payload:    %s\n", Str(t, "payload").c_str());
  if (t.contains("last_error")) std::printf("last error: %s\n", Str(t, "last_error").c_str());
  if (const json::value* log = t.if_contains("attempt_log"); log && log->is_array()) {
    const bool nats = t.at("target").as_object().contains("nats");
    const json::array& entries = log->as_array();
    std::printf("last %zu attempt%s:\n", entries.size(), entries.size() == 1 ? "" : "s");
    for (const json::value& v : entries) {
      const json::object& a = v.as_object();
      std::string outcome;
      if (a.contains("status")) outcome = "HTTP " + Str(a, "status");
      if (a.contains("error")) {
        if (!a.contains("status")) outcome = Str(a, "error");
      } else if (!a.contains("status")) {
        outcome = nats ? "acknowledged by JetStream" : "delivered";
      }
      std::printf("  %s  %6s ms  %s\n", FormatRfc3339(a.at("started_ms").as_int64()).c_str(),
                  Str(a, "duration_ms").c_str(), outcome.c_str());
    }
  }
}

void PrintTableHeader() {
  std::printf("%-34s %-10s %-24s %-8s %s\n", "ID", "STATE", "DUE (UTC)", "ATTEMPTS",
              "TARGET / LAST ERROR");
}

void PrintTableRows(const json::object& page) {
  for (const json::value& v : page.at("timers").as_array()) {
    const json::object& t = v.as_object();
    const std::int64_t due = t.contains("next_attempt_ms") ? t.at("next_attempt_ms").as_int64()
                                                           : t.at("fire_at_ms").as_int64();
    const std::string last = t.contains("last_error") ? "  (" + Str(t, "last_error") + ")" : "";
    std::printf("%-34s %-10s %-24s %-8s %s%s\n", Str(t, "id").c_str(), Str(t, "state").c_str(),
                FormatRfc3339(due).c_str(), Str(t, "attempts").c_str(), Target(t).c_str(),
                last.c_str());
  }
}

void PrintFields(const json::object& o, int indent) {
  for (const auto& [key, value] : o) {
    if (value.is_object()) {
      std::printf("%*s%s:\n", indent, "", std::string(key).c_str());
      PrintFields(value.as_object(), indent + 2);
    } else {
      const std::string text =
          value.is_string() ? std::string(value.as_string()) : json::serialize(value);
      std::printf("%*s%s: %s\n", indent, "", std::string(key).c_str(), text.c_str());
    }
  }
}

}  // namespace tickwheel::app
