// SPDX-License-Identifier: Apache-2.0
#include "api/transfer_json.h"

#include <boost/json.hpp>
#include <cstdio>

#include "api/json_body.h"
#include "api/schedule_json.h"
#include "api/timer_json.h"
#include "common/base64.h"
#include "schedule/schedule_record.h"
#include "timer/flow_key.h"
#include "timer/timer_state_machine.h"
#include "timer/trace_context.h"

namespace tickwheel::server {

namespace json = boost::json;

namespace {

using request_error::Bad;

std::string Hex(const Digest& d) {
  std::string out;
  out.reserve(64);
  char buf[3];
  for (std::uint8_t b : d) {
    std::snprintf(buf, sizeof buf, "%02x", b);
    out += buf;
  }
  return out;
}

bool ParseHex(std::string_view hex, Digest& out) {
  if (hex.size() != 64) return false;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  for (std::size_t i = 0; i < 32; ++i) {
    const int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<std::uint8_t>(hi * 16 + lo);
  }
  return true;
}

// Takes `key` out of `obj` (nullopt if absent).
std::optional<json::value> Take(json::object& obj, std::string_view key) {
  auto it = obj.find(key);
  if (it == obj.end()) return std::nullopt;
  json::value v = std::move(it->value());
  obj.erase(it);
  return v;
}

// An integer in [min, max], or `fallback` when absent.
Result<std::int64_t> IntegerIn(const std::optional<json::value>& v, const std::string& field,
                               std::int64_t min, std::int64_t max, std::int64_t fallback) {
  if (!v) return fallback;
  if (!v->is_int64()) {
    return Bad("invalid_type", field, field + " must be an integer");
  }
  const std::int64_t n = v->as_int64();
  if (n < min || n > max) {
    return Bad("out_of_range", field,
               field + " must be " + std::to_string(min) + ".." + std::to_string(max) + ", not " +
                   std::to_string(n));
  }
  return n;
}

// A string field as a header's values: none when absent, else the one.
Result<std::vector<std::string_view>> OptionalString(const std::optional<json::value>& v,
                                                     const std::string& field) {
  std::vector<std::string_view> out;
  if (!v) return out;
  if (!v->is_string()) return Bad("invalid_type", field, field + " must be a string");
  out.emplace_back(v->as_string());
  return out;
}

Result<std::vector<AttemptLog>> ParseAttemptLog(const std::optional<json::value>& v) {
  std::vector<AttemptLog> out;
  if (!v) return out;
  if (!v->is_array()) return Bad("invalid_type", "attempt_log", "attempt_log must be an array");
  const json::array& a = v->as_array();
  if (a.size() > kMaxAttemptLog) {
    return Bad("out_of_range", "attempt_log",
               "attempt_log has " + std::to_string(a.size()) + " entries; at most " +
                   std::to_string(kMaxAttemptLog) + " are kept");
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    const std::string field = "attempt_log[" + std::to_string(i) + "]";
    if (!a[i].is_object()) return Bad("invalid_type", field, field + " must be an object");
    json::object e = a[i].as_object();
    AttemptLog log;
    Result<std::int64_t> started = IntegerIn(Take(e, "started_ms"), field + ".started_ms", 0,
                                             INT64_MAX, -1);
    if (!started.ok()) return started.status();
    if (*started < 0) return Bad("missing_field", field + ".started_ms", field + " needs started_ms");
    log.started_ms = *started;
    Result<std::int64_t> duration =
        IntegerIn(Take(e, "duration_ms"), field + ".duration_ms", 0, UINT32_MAX, 0);
    if (!duration.ok()) return duration.status();
    log.duration_ms = static_cast<std::uint32_t>(*duration);
    Result<std::int64_t> status = IntegerIn(Take(e, "status"), field + ".status", 0, 999, 0);
    if (!status.ok()) return status.status();
    log.status = static_cast<std::int32_t>(*status);
    Result<std::int64_t> throttled =
        IntegerIn(Take(e, "throttled_ms"), field + ".throttled_ms", 0, UINT32_MAX, 0);
    if (!throttled.ok()) return throttled.status();
    log.throttled_ms = static_cast<std::uint32_t>(*throttled);
    if (std::optional<json::value> error = Take(e, "error")) {
      if (!error->is_string()) return Bad("invalid_type", field + ".error", field + ".error must be a string");
      log.error = std::string(error->as_string());
    }
    if (!e.empty()) {
      const std::string key(e.begin()->key());
      return Bad("unknown_field", field + "." + key,
                 "unknown field \"" + field + "." + key +
                     "\"; an attempt has started_ms, duration_ms, status, error, throttled_ms");
    }
    out.push_back(std::move(log));
  }
  return out;
}

Result<ImportLine> ParseHeader(json::object& obj) {
  ImportLine out;
  out.kind = ImportLine::Kind::kHeader;
  Result<std::int64_t> format = IntegerIn(Take(obj, "format"), "format", 1, INT32_MAX, 1);
  if (!format.ok()) return format.status();
  if (*format > kExportFormat) {
    return Bad("unsupported_format", "format",
               "this export is of format " + std::to_string(*format) +
                   "; this server reads format " + std::to_string(kExportFormat) +
                   ": import it with the version of tickwheel that exported it, or later");
  }
  Result<std::int64_t> timers = IntegerIn(Take(obj, "timers"), "timers", 0, INT64_MAX, -1);
  if (!timers.ok()) return timers.status();
  out.timers = *timers;
  return out;
}

Result<ImportLine> ParseSchedule(json::object& obj) {
  ImportLine out;
  out.kind = ImportLine::Kind::kSchedule;
  const std::optional<json::value> id = Take(obj, "id");
  const std::optional<json::value> record = Take(obj, "record");
  (void)Take(obj, "schedule");  // for reading; the record is what is imported
  if (!id || !id->is_string()) {
    return Bad(id ? "invalid_type" : "missing_field", "id", "a schedule line needs its id (a string)");
  }
  if (Status s = ValidateId(id->as_string(), "id"); !s.ok()) return s;
  std::optional<std::string> bytes;
  if (record && record->is_string()) bytes = Base64Decode(record->as_string());
  if (!bytes) {
    return Bad(record ? "invalid_value" : "missing_field", "record",
               "a schedule line needs its record: the stored schedule, in base64, as exported");
  }
  if (!obj.empty()) {
    const std::string key(obj.begin()->key());
    return Bad("unknown_field", key,
               "unknown field \"" + key + "\"; a schedule line has id, record, schedule");
  }
  Result<ScheduleRecord> decoded = DecodeWholeSchedule(std::string(id->as_string()), *bytes);
  if (!decoded.ok()) return Bad("invalid_value", "record", decoded.status().message());
  out.schedule = EncodeSchedule(*decoded);  // its state from the record
  return out;
}

Result<ImportLine> ParseFlow(json::object& obj) {
  ImportLine out;
  out.kind = ImportLine::Kind::kFlow;
  const std::optional<json::value> key = Take(obj, "key");
  std::optional<json::value> settings = Take(obj, "settings");
  if (!key || !key->is_string()) {
    return Bad(key ? "invalid_type" : "missing_field", "key", "a flow line needs its key (a string)");
  }
  if (Status s = CheckFlowKey(key->as_string(), "key"); !s.ok()) return s;
  if (!settings || !settings->is_object()) {
    return Bad(settings ? "invalid_type" : "missing_field", "settings",
               "a flow line needs its settings (an object)");
  }
  if (!obj.empty()) {
    const std::string k(obj.begin()->key());
    return Bad("unknown_field", k, "unknown field \"" + k + "\"; a flow line has key, settings");
  }
  Result<FlowSettings> parsed =
      DecodeFlowSettings(key->as_string(), json::serialize(*settings));
  if (!parsed.ok()) return Bad("invalid_value", "settings", parsed.status().message());
  out.flow_key = std::string(key->as_string());
  out.flow_settings = *parsed;
  return out;
}

}  // namespace

std::string ExportScheduleLine(const ScheduleRow& row) {
  Result<ScheduleRecord> r = DecodeSchedule(row);
  const std::string view = r.ok() ? ScheduleJson(*r, /*show_header_values=*/true) : "null";
  // The whole schedule, in a format the versions before the split read;
  // a record this server cannot read is exported as it is stored.
  const std::string whole = r.ok() ? EncodeWholeSchedule(*r) : row.record;
  return "{\"kind\":\"schedule\",\"id\":" + json::serialize(json::string(row.id)) +
         ",\"record\":\"" + Base64Encode(whole) + "\",\"schedule\":" + view + "}\n";
}

std::string ExportFlowLine(const std::string& key, const std::string& stored_settings) {
  // The stored form is the API's JSON with updated_ms (flow/flow_settings.h).
  return "{\"kind\":\"flow\",\"key\":" + json::serialize(json::string(key)) +
         ",\"settings\":" + (stored_settings.empty() ? std::string("{}") : stored_settings) +
         "}\n";
}

std::string ExportHeaderLine(const ExportHeader& h) {
  json::array states;
  json::object counts;
  std::int64_t timers = 0;
  for (int i = 0; i < kNumStates; ++i) {
    const std::string_view name = StateName(static_cast<TimerState>(i));
    counts[name] = h.counts[static_cast<std::size_t>(i)];
    if (h.states & (1u << i)) {
      states.emplace_back(name);
      timers += h.counts[static_cast<std::size_t>(i)];
    }
  }
  return json::serialize(json::object{{"kind", "export"},
                                      {"format", kExportFormat},
                                      {"server_version", h.server_version},
                                      {"store", h.store},
                                      {"taken_ms", h.taken_ms},
                                      {"states", std::move(states)},
                                      {"counts", std::move(counts)},
                                      {"timers", timers}}) +
         "\n";
}

std::string ExportTimerLine(const TimerRecord& r) {
  std::string body = TimerJson(r, /*show_header_values=*/true);
  std::string out;
  out.reserve(body.size() + 100);
  out += "{\"kind\":\"timer\",";
  out.append(body, 1, body.size() - 2);  // without its braces
  out += ",\"create_digest\":\"";
  out += r.digest_kind == DigestKind::kSha256 ? "sha256:" + Hex(r.digest) : "legacy";
  out += "\"}\n";
  return out;
}

std::string ExportEndLine() { return "{\"kind\":\"end\"}\n"; }

Result<unsigned> ParseStateSet(std::string_view text, std::string_view field) {
  if (text.empty() || text == "all") return kAllStates;
  unsigned out = 0;
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    const std::string_view name = text.substr(0, comma);
    std::optional<TimerState> s = ParseState(name);
    if (!s) {
      return Bad("invalid_value", std::string(field),
                 std::string(field) + ": \"" + std::string(name) +
                     "\" is not a state (pending, delivering, delivered, failed, cancelled)");
    }
    out |= 1u << static_cast<unsigned>(*s);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
  }
  return out;
}

Result<ImportLine> ParseImportLine(std::string_view line, const ApiLimits& limits,
                                   std::int64_t now_ms) {
  Result<json::value> parsed = ParseJsonBody(line);
  if (!parsed.ok()) return parsed.status();
  if (!parsed->is_object()) return Bad("invalid_type", "", "a line must be a JSON object");
  json::object obj = std::move(parsed->as_object());
  std::string kind = "timer";
  if (std::optional<json::value> k = Take(obj, "kind")) {
    if (!k->is_string()) return Bad("invalid_type", "kind", "kind must be a string");
    kind = std::string(k->as_string());
  }
  if (kind == "export") return ParseHeader(obj);
  if (kind == "end") {
    ImportLine end;
    end.kind = ImportLine::Kind::kEnd;
    return end;
  }
  if (kind == "schedule") return ParseSchedule(obj);
  if (kind == "flow") return ParseFlow(obj);
  if (kind != "timer") {
    return Bad("unsupported_kind", "kind",
               "lines of kind \"" + kind +
                   "\" cannot be imported by this server, which knows export, timer, schedule, "
                   "flow and end; import the file into a tickwheel that has them");
  }
  // The id may be an occurrence's ("<schedule>@<time>", made by its
  // schedule), which a create may not name: checked as a path's id.
  // Other ids stay in the body: its digest is a create's with that id.
  const json::value* given_id = obj.if_contains("id");
  if (given_id == nullptr || !given_id->is_string()) {
    return Bad(given_id ? "invalid_type" : "missing_field", "id",
               "an imported timer needs its id (a string)");
  }
  const std::string id(given_id->as_string());
  if (Status s = ValidateTimerPathId(id); !s.ok()) return s;
  if (id.find('@') != std::string::npos) obj.erase("id");
  // The state fields come out; what is left is the create body.
  const std::optional<json::value> state = Take(obj, "state");
  const std::optional<json::value> next = Take(obj, "next_attempt_ms");
  const std::optional<json::value> attempts = Take(obj, "attempts");
  const std::optional<json::value> created = Take(obj, "created_ms");
  const std::optional<json::value> updated = Take(obj, "updated_ms");
  const std::optional<json::value> last_error = Take(obj, "last_error");
  const std::optional<json::value> attempt_log = Take(obj, "attempt_log");
  const std::optional<json::value> digest = Take(obj, "create_digest");
  const std::optional<json::value> traceparent = Take(obj, "traceparent");
  const std::optional<json::value> tracestate = Take(obj, "tracestate");
  // The fire time stays as it was: the create body is checked as of it (not
  // moved to now, no horizon counted from now).
  const json::value* fire_at = obj.if_contains("fire_at_ms");
  const std::int64_t as_of = fire_at && fire_at->is_int64() ? fire_at->as_int64() : now_ms;
  Result<TimerSpec> spec = ParseTimerSpec(obj, limits, as_of);
  if (!spec.ok()) return spec.status();
  spec->id = id;
  ImportLine out;
  Result<std::int64_t> created_ms = IntegerIn(created, "created_ms", 0, INT64_MAX, now_ms);
  if (!created_ms.ok()) return created_ms.status();
  TimerRecord& r = out.record;
  r = NewTimer(*spec, id, *created_ms);
  // The trace context as the create's headers gave it, checked as they are.
  Result<std::vector<std::string_view>> parents = OptionalString(traceparent, "traceparent");
  if (!parents.ok()) return parents.status();
  Result<std::vector<std::string_view>> states = OptionalString(tracestate, "tracestate");
  if (!states.ok()) return states.status();
  Result<TraceContext> trace = ParseTraceHeaders(*parents, *states);
  if (!trace.ok()) return trace.status();
  r.trace = std::move(*trace);
  if (!state || !state->is_string()) {
    return Bad(state ? "invalid_type" : "missing_field", "state",
               "an imported timer needs its state (pending, delivering, delivered, failed, "
               "cancelled)");
  }
  std::optional<TimerState> s = ParseState(state->as_string());
  if (!s) {
    return Bad("invalid_value", "state",
               "\"" + std::string(state->as_string()) +
                   "\" is not a state (pending, delivering, delivered, failed, cancelled)");
  }
  r.state = *s;
  Result<std::int64_t> due = IntegerIn(next, "next_attempt_ms", 0, INT64_MAX, r.fire_at_ms);
  if (!due.ok()) return due.status();
  r.due_ms = IsScheduled(r.state) ? *due : r.fire_at_ms;
  Result<std::int64_t> n = IntegerIn(attempts, "attempts", 0, r.max_attempts, 0);
  if (!n.ok()) return n.status();
  r.attempts = static_cast<std::uint32_t>(*n);
  Result<std::int64_t> updated_ms = IntegerIn(updated, "updated_ms", 0, INT64_MAX, *created_ms);
  if (!updated_ms.ok()) return updated_ms.status();
  r.updated_ms = *updated_ms;
  if (last_error) {
    if (!last_error->is_string()) return Bad("invalid_type", "last_error", "last_error must be a string");
    r.last_error = std::string(last_error->as_string());
  }
  Result<std::vector<AttemptLog>> log = ParseAttemptLog(attempt_log);
  if (!log.ok()) return log.status();
  r.attempt_log = std::move(*log);
  if (digest) {
    const std::string_view text = digest->is_string() ? std::string_view(digest->as_string()) : "";
    if (text == "legacy") {
      r.digest_kind = DigestKind::kLegacy;
      r.digest = {};
    } else if (text.substr(0, 7) != "sha256:" || !ParseHex(text.substr(7), r.digest)) {
      return Bad("invalid_value", "create_digest",
                 "create_digest must be \"sha256:\" and 64 lower-case hex digits, or \"legacy\"");
    }
  }  // else: the digest of the line's create body (a create of it repeats it)
  return out;
}

}  // namespace tickwheel::server
