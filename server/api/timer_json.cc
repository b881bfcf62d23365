// SPDX-License-Identifier: Apache-2.0
#include "api/timer_json.h"

#include <boost/json.hpp>

#include "api/json_body.h"
#include "common/utf8.h"
#include "timer/target.h"

namespace tickwheel::server {

namespace json = boost::json;

namespace {

std::string JsonQuoted(std::string_view text) {
  std::string out;
  AppendJsonString(out, text);
  return out;
}

}  // namespace

std::string ShownTarget(std::string_view url, bool show_secrets) {
  if (show_secrets) return std::string(url);
  // The query (and a fragment) may hold a key: as header values are.
  const std::size_t q = url.find_first_of("?#");
  if (q == std::string_view::npos) return std::string(url);
  return std::string(url.substr(0, q + 1)) + "***";
}

void AppendDeliveryJson(std::string& out, const std::string& target,
                        const std::vector<std::pair<std::string, std::string>>& headers,
                        const std::string& flow, const std::string& payload,
                        std::uint32_t max_attempts, std::uint32_t backoff_ms,
                        bool show_header_values) {
  out += ",\"retry\":{\"max_attempts\":";
  out += std::to_string(max_attempts);
  out += ",\"backoff_ms\":";
  out += std::to_string(backoff_ms);
  if (IsNatsTarget(target)) {
    out += "},\"target\":{\"nats\":";
    out += JsonQuoted(NatsSubject(target));
  } else {
    out += "},\"target\":{\"url\":";
    out += JsonQuoted(ShownTarget(target, show_header_values));
    if (!headers.empty()) {
      out += ",\"headers\":{";
      for (std::size_t i = 0; i < headers.size(); ++i) {
        if (i) out += ',';
        out += JsonQuoted(headers[i].first);
        out += ':';
        out += show_header_values ? JsonQuoted(headers[i].second) : "\"***\"";
      }
      out += '}';
    }
  }
  out += "},\"flow\":";
  out += JsonQuoted(flow);
  out += ",\"payload\":";
  out += payload.empty() ? "null" : payload;
}

std::string TimerJson(const TimerRecord& r, bool show_header_values) {
  // Built by hand: the payload is stored serialized and goes out as is.
  std::string out;
  out.reserve(256 + r.payload.size() + r.target.size());
  out += "{\"id\":";
  out += JsonQuoted(r.id);
  out += ",\"state\":\"";
  out += StateName(r.state);
  out += "\",\"fire_at_ms\":";
  out += std::to_string(r.fire_at_ms);
  if (IsScheduled(r.state)) {
    out += ",\"next_attempt_ms\":";
    out += std::to_string(r.due_ms);
  }
  out += ",\"attempts\":";
  out += std::to_string(r.attempts);
  AppendDeliveryJson(out, r.target, r.headers, r.flow, r.payload, r.max_attempts, r.backoff_ms,
                     show_header_values);
  out += ",\"created_ms\":";
  out += std::to_string(r.created_ms);
  out += ",\"updated_ms\":";
  out += std::to_string(r.updated_ms);
  if (!r.trace.traceparent.empty()) {
    out += ",\"traceparent\":";
    out += JsonQuoted(r.trace.traceparent);
  }
  if (!r.trace.tracestate.empty()) {
    out += ",\"tracestate\":";
    out += JsonQuoted(r.trace.tracestate);
  }
  if (!r.last_error.empty()) {
    out += ",\"last_error\":";
    out += JsonQuoted(r.last_error);
  }
  if (!r.attempt_log.empty()) {
    out += ",\"attempt_log\":[";
    for (std::size_t i = 0; i < r.attempt_log.size(); ++i) {
      const AttemptLog& a = r.attempt_log[i];
      if (i) out += ',';
      out += "{\"started_ms\":" + std::to_string(a.started_ms) +
             ",\"duration_ms\":" + std::to_string(a.duration_ms);
      if (a.status != 0) out += ",\"status\":" + std::to_string(a.status);
      if (!a.error.empty()) out += ",\"error\":" + JsonQuoted(a.error);
      if (a.throttled_ms != 0) out += ",\"throttled_ms\":" + std::to_string(a.throttled_ms);
      out += '}';
    }
    out += ']';
  }
  out += '}';
  return out;
}

std::string BatchJson(const std::vector<TimerRecord>& records, const std::vector<char>& created) {
  std::string out = "{\"timers\":[";
  out.reserve(records.size() * 80);
  for (std::size_t i = 0; i < records.size(); ++i) {
    const TimerRecord& r = records[i];
    if (i) out += ',';
    out += "{\"id\":";
    AppendJsonString(out, r.id);
    out += ",\"state\":\"";
    out += StateName(r.state);
    out += "\",\"fire_at_ms\":";
    out += std::to_string(r.fire_at_ms);
    out += created[i] ? ",\"created\":true}" : ",\"created\":false}";
  }
  return out + "]}";
}

std::string PageJson(const ListPage& page, bool show_header_values) {
  std::string out = "{\"timers\":[";
  for (std::size_t i = 0; i < page.records.size(); ++i) {
    if (i) out += ',';
    out += TimerJson(page.records[i], show_header_values);
  }
  out += ']';
  if (page.next) out += ",\"next_after\":" + JsonQuoted(EncodeCursor(*page.next));
  return out + '}';
}

std::string ErrorJson(const Status& s) {
  // Messages and fields may quote the client's bytes: keep the body JSON.
  json::object err{{"code", s.reason()}, {"message", ValidUtf8(s.message())}};
  if (!s.field().empty()) err["field"] = ValidUtf8(s.field());
  return json::serialize(json::object{{"error", std::move(err)}});
}

int HttpStatusOf(const Status& s) {
  // Codes whose HTTP status is not their kind's.
  if (s.reason() == "unsupported_media_type") return 415;
  if (s.reason() == "misdirected_request") return 421;
  if (s.reason() == "method_not_allowed") return 405;
  switch (s.code()) {
    case StatusCode::kOk: return 200;
    case StatusCode::kInvalidArgument: return 400;
    case StatusCode::kTooLarge: return 413;
    case StatusCode::kNotFound: return 404;
    case StatusCode::kConflict: return 409;
    case StatusCode::kUnauthenticated: return 401;
    case StatusCode::kPermissionDenied: return 403;
    case StatusCode::kUnavailable: return 503;
    case StatusCode::kFenced: return 503;
    case StatusCode::kCorrupt: return 500;
  }
  return 500;
}

std::string EncodeCursor(const ListCursor& cursor) {
  return std::to_string(cursor.time_ms) + ":" + cursor.id;
}

}  // namespace tickwheel::server
