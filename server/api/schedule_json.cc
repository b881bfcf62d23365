// SPDX-License-Identifier: Apache-2.0
#include "api/schedule_json.h"

#include <cstdio>
#include <ctime>

#include "api/json_body.h"
#include "api/timer_json.h"
#include "timer/flow_key.h"
#include "timer/occurrence_id.h"

namespace tickwheel::server {
namespace {

void Field(std::string& out, const char* name, std::int64_t v) {
  out += ",\"";
  out += name;
  out += "\":";
  out += std::to_string(v);
}

void Field(std::string& out, const char* name, std::string_view v) {
  out += ",\"";
  out += name;
  out += "\":";
  AppendJsonString(out, v);
}

void Optional(std::string& out, const char* name, const std::optional<std::int64_t>& v) {
  if (v) Field(out, name, *v);
}

void Times(std::string& out, const char* name, const std::vector<std::int64_t>& times) {
  out += ",\"";
  out += name;
  out += "\":[";
  for (std::size_t i = 0; i < times.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(times[i]);
  }
  out += ']';
}

void Occurrence(std::string& out, const TimerRecord& t) {
  out += "{\"id\":";
  AppendJsonString(out, t.id);
  if (std::optional<OccurrenceName> name = ParseOccurrenceId(t.id)) {
    Field(out, "nominal_ms", name->nominal_ms);
  }
  Field(out, "state", StateName(t.state));
  Field(out, "fire_at_ms", t.fire_at_ms);
  Field(out, "attempts", static_cast<std::int64_t>(t.attempts));
  Field(out, "updated_ms", t.updated_ms);
  if (!t.attempt_log.empty() && t.attempt_log.back().status != 0) {
    Field(out, "status", t.attempt_log.back().status);
  }
  if (!t.last_error.empty()) Field(out, "last_error", t.last_error);
  out += '}';
}

}  // namespace

std::string UtcTime(std::int64_t ms) {
  const std::int64_t seconds = ms >= 0 ? ms / 1000 : (ms - 999) / 1000;
  const int millis = static_cast<int>(ms - seconds * 1000);
  const std::time_t t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[48];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
  std::string out = buf;
  if (millis != 0) {
    std::snprintf(buf, sizeof buf, ".%03d", millis);
    out += buf;
  }
  return out + "Z";
}

std::string ScheduleJson(const ScheduleRecord& r, bool show_header_values,
                         const ScheduleDetails* details) {
  std::string out;
  out.reserve(512 + r.payload.size() + r.target.size());
  out += "{\"id\":";
  AppendJsonString(out, r.id);
  Field(out, "state", StateName(r.state));
  if (r.state == ScheduleState::kEnded) Field(out, "ended_reason", EndReasonName(r.end_reason));
  Optional(out, "paused_ms", r.paused_ms);
  if (r.spec.every_ms) {
    Field(out, "every_ms", *r.spec.every_ms);
    Field(out, "anchor_ms", r.spec.anchor_ms);
  } else {
    Field(out, "cron", r.spec.cron);
    // The zone is always shown, UTC when none was given.
    Field(out, "time_zone", r.spec.time_zone.empty() ? std::string_view("UTC")
                                                     : std::string_view(r.spec.time_zone));
    Field(out, "dst_gap", ToString(r.spec.dst_gap));
    Field(out, "dst_overlap", ToString(r.spec.dst_overlap));
  }
  Optional(out, "start_ms", r.start_ms);
  Optional(out, "end_ms", r.end_ms);
  if (r.max_occurrences) Field(out, "max_occurrences", static_cast<std::int64_t>(*r.max_occurrences));
  Field(out, "jitter_ms", r.jitter_ms);
  Field(out, "overlap", PolicyName(r.overlap));
  Field(out, "catch_up", PolicyName(r.catch_up));
  Field(out, "catch_up_window_ms", r.catch_up_window_ms);
  Field(out, "catch_up_max", static_cast<std::int64_t>(r.catch_up_max));
  AppendDeliveryJson(out, r.target, r.headers, r.flow.empty() ? DefaultFlowKey(r.target) : r.flow,
                     r.payload, r.max_attempts, r.backoff_ms,
                     show_header_values);
  Field(out, "created_ms", r.created_ms);
  Field(out, "updated_ms", r.updated_ms);
  if (!r.trace.traceparent.empty()) {
    out += ",\"traceparent\":";
    AppendJsonString(out, r.trace.traceparent);
  }
  if (!r.trace.tracestate.empty()) {
    out += ",\"tracestate\":";
    AppendJsonString(out, r.trace.tracestate);
  }
  // Where planning stands.
  Optional(out, "next_ms", r.next_ms);
  if (!r.catch_up_ms.empty()) Times(out, "catch_up_ms", r.catch_up_ms);
  Optional(out, "buffered_ms", r.buffered_ms);
  Optional(out, "last_fired_ms", r.last_fired_ms);
  Field(out, "occurrences", static_cast<std::int64_t>(r.occurrences));
  const ScheduleCounters& c = r.counts;
  out += ",\"counts\":{\"planned\":" + std::to_string(c.planned) +
         ",\"fired\":" + std::to_string(c.fired) +
         ",\"skipped\":{\"overlap\":" + std::to_string(c.skipped_overlap) +
         ",\"catch_up\":" + std::to_string(c.skipped_catch_up) +
         ",\"dst\":" + std::to_string(c.skipped_dst) +
         "},\"triggered\":" + std::to_string(c.triggered) +
         ",\"backfilled\":" + std::to_string(c.backfilled) + "}";
  if (details) {
    out += ",\"next\":[";
    for (std::size_t i = 0; i < details->upcoming.size(); ++i) {
      const std::int64_t at = details->upcoming[i];
      if (i) out += ',';
      out += "{\"at_ms\":" + std::to_string(at);
      Field(out, "occurrence", OccurrenceId(r.id, at));
      Field(out, "utc", UtcTime(at));
      if (details->timeline) {
        const LocalTime local = details->timeline->recurrence().Describe(at);
        Field(out, "local", local.local);
        Field(out, "utc_offset_s", local.utc_offset_s);
        Field(out, "abbreviation", local.abbreviation);
      }
      out += '}';
    }
    out += "],\"last_occurrences\":[";
    for (std::size_t i = 0; i < details->last.size(); ++i) {
      if (i) out += ',';
      Occurrence(out, details->last[i]);
    }
    out += ']';
  }
  out += '}';
  return out;
}

std::string SchedulePageJson(const std::vector<ScheduleRecord>& schedules,
                             const std::optional<std::string>& next, bool show_header_values) {
  // Sized once: a page of large payloads is built without regrowing.
  std::size_t size = 64;
  for (const ScheduleRecord& r : schedules) size += 512 + r.payload.size() + r.target.size();
  std::string out;
  out.reserve(size);
  out += "{\"schedules\":[";
  for (std::size_t i = 0; i < schedules.size(); ++i) {
    if (i) out += ',';
    out += ScheduleJson(schedules[i], show_header_values);
  }
  out += ']';
  if (next) Field(out, "next_after", *next);
  out += '}';
  return out;
}

std::string BackfillJson(const BackfillOutcome& o) {
  std::string out = "{\"created\":" + std::to_string(o.created) +
                    ",\"existing\":" + std::to_string(o.existing) +
                    ",\"more\":" + (o.more ? "true" : "false");
  if (o.more) Field(out, "next_from_ms", o.next_from_ms);
  return out + '}';
}

}  // namespace tickwheel::server
