// SPDX-License-Identifier: Apache-2.0
// Fuzzes the reading of HTTP requests as tickwheel serve does it
// (server/api/http_server.cc): Boost.Beast's request_parser<string_body>
// with the server's header limit (16 KiB) and a body limit, fed the input
// in pieces, request after request from one buffer as on a keep-alive
// connection; then what Api::Admit checks on each request's headers (Host,
// Origin and Content-Type: api/request_guard.h), the server's own router
// (MatchRoute, AllowedMethods, MethodAllowed, CheckPathId and RouteTemplate
// of server/api/route.cc, which Api::Admit and Api::Handle call) and the
// first steps of the handler it picks: the list or get query parsed, a
// create's or batch's trace context headers read, a create, batch or
// reschedule body parsed as JSON and as timers.
//
// Input: byte 0 picks the body limit (0..255 * 64 bytes, or the server's 16
// MiB when 0), byte 1 the size of the pieces (1..255 bytes, 0: all at
// once); the rest is what a client sends.
//
// Oracle: no crash, no hang (every step consumes input or ends), and every
// request Beast accepts has a method, a target starting with '/' (or '*')
// without spaces or control characters, a header within 16 KiB, and a body
// within the limit that matches its Content-Length; every API error is
// well-formed (CheckError; the guard's: 400, 403, 415 or 421 with their
// reasons, and a JSON error body). The router agrees with the path, both
// ways: a route with a fixed path is matched by exactly that path; the id
// of a timer or schedule route and the key of a flow route are the rest of
// the path without its action suffix, %-escapes undone (a malformed one
// flagged); every path under /v1/timers/, /v1/schedules/ or /v1/flows/ is
// routed there; the methods are those the docs list for the route, and a
// method is allowed exactly when listed; the path's id passes exactly when
// it is valid (a timer's: an id or an occurrence "<schedule>@<time>"; a
// schedule's: an id; a flow's: a flow key), each rule written again here
// from the docs; the label (the metrics' route) is the route's template,
// "other" for no route, never the path.
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "api/json_body.h"
#include "api/list_query.h"
#include "api/request_guard.h"
#include "api/route.h"
#include "api/timer_request.h"
#include "api/trace_headers.h"
#include "decoder_checks.h"

namespace tickwheel::testing {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;

constexpr std::size_t kHeaderLimit = 16 * 1024;  // as HttpServer::Serve

void Require(bool ok, const std::string& what) {
  if (!ok) FuzzFail("HTTP request: " + what);
}

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.substr(0, prefix.size()) == prefix;
}
bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// An error of the request guard: a known reason with its status, a
// message, and a JSON error body.
void CheckGuardError(const server::Status& s, std::string_view what) {
  const std::string where(what);
  const int status = server::HttpStatusOf(s);
  const bool known = (s.reason() == "misdirected_request" && status == 421) ||
                     (s.reason() == "origin_not_allowed" && status == 403) ||
                     (s.reason() == "unsupported_media_type" && status == 415) ||
                     (s.reason() == "bad_request" && status == 400);
  if (!known) FuzzFail(where + ": reason \"" + s.reason() + "\" with status " + std::to_string(status));
  if (s.message().empty()) FuzzFail(where + ": empty error message");
  boost::system::error_code ec;
  (void)boost::json::parse(server::ErrorJson(s), ec);
  if (ec) FuzzFail(where + ": the error body is not valid JSON");
}

// What Api::Admit checks on a request's headers (server/api/api.cc).
void Guard(const http::request<http::string_body>& req) {
  static const server::RequestGuard guard =
      *server::RequestGuard::Make({.public_hosts = {"timers.test", "*.apps.test"},
                                   .allow_origins = {"https://ops.example.com"}});
  if (server::Status s = guard.CheckHost(req); !s.ok()) CheckGuardError(s, "host");
  const auto origin = guard.CheckOrigin(req);
  if (!origin.ok()) CheckGuardError(origin.status(), "origin");
  const server::Status type = server::RequestGuard::CheckContentType(req, !req.body().empty());
  if (!type.ok()) CheckGuardError(type, "content type");
  (void)server::RequestGuard::HostOf(req[http::field::host]);
}

using Kind = server::Route::Kind;

// The routes with one fixed path and their methods, as docs/server.md,
// schedules.md, flows.md, data.md and openapi.json list them.
struct Fixed {
  std::string_view path;
  Kind kind;
  std::string_view methods;
};
constexpr Fixed kFixed[] = {
    {"/healthz", Kind::kHealth, "GET"},
    {"/metrics", Kind::kMetrics, "GET"},
    {"/v1/whoami", Kind::kWhoami, "GET"},
    {"/v1/timers", Kind::kTimers, "GET, POST"},
    {"/v1/timers:batch", Kind::kBatch, "POST"},
    {"/v1/timers:retry-failed", Kind::kRetryFailed, "POST"},
    {"/v1/timers:delete-failed", Kind::kDeleteFailed, "POST"},
    {"/v1/stats", Kind::kStats, "GET"},
    {"/v1/stats/series", Kind::kStatsSeries, "GET"},
    {"/v1/cluster", Kind::kCluster, "GET"},
    {"/v1/schedules", Kind::kSchedules, "GET, POST"},
    {"/v1/flows", Kind::kFlows, "GET"},
    {"/v1/openapi.json", Kind::kOpenApi, "GET"},
    {"/v1/admin/backup", Kind::kAdminBackup, "POST"},
    {"/v1/admin/export", Kind::kAdminExport, "GET"},
    {"/v1/admin/import", Kind::kAdminImport, "POST"},
    {"/v1/admin/delivery:pause", Kind::kAdminDeliveryPause, "POST"},
    {"/v1/admin/delivery:resume", Kind::kAdminDeliveryResume, "POST"},
    {"/v1/admin/writes:pause", Kind::kAdminWritesPause, "POST"},
    {"/v1/admin/writes:resume", Kind::kAdminWritesResume, "POST"},
};

// The routes with a variable part: under `prefix`, an id (or key) and an
// action suffix ("" for none).
struct Variable {
  std::string_view prefix;
  std::string_view suffix;
  Kind kind;
  std::string_view tmpl;
  std::string_view methods;
};
constexpr Variable kVariable[] = {
    {"/v1/timers/", "", Kind::kTimer, "/v1/timers/{id}", "GET, PATCH, DELETE"},
    {"/v1/timers/", ":retry", Kind::kTimerRetry, "/v1/timers/{id}:retry", "POST"},
    {"/v1/schedules/", "", Kind::kSchedule, "/v1/schedules/{id}", "GET, PATCH, DELETE"},
    {"/v1/schedules/", ":pause", Kind::kSchedulePause, "/v1/schedules/{id}:pause", "POST"},
    {"/v1/schedules/", ":resume", Kind::kScheduleResume, "/v1/schedules/{id}:resume", "POST"},
    {"/v1/schedules/", ":trigger", Kind::kScheduleTrigger, "/v1/schedules/{id}:trigger", "POST"},
    {"/v1/schedules/", ":backfill", Kind::kScheduleBackfill, "/v1/schedules/{id}:backfill", "POST"},
    {"/v1/flows/", "", Kind::kFlow, "/v1/flows/{key}", "GET, PUT, DELETE"},
    {"/v1/flows/", ":pause", Kind::kFlowPause, "/v1/flows/{key}:pause", "POST"},
    {"/v1/flows/", ":resume", Kind::kFlowResume, "/v1/flows/{key}:resume", "POST"},
};

std::string Hex(std::string_view s) {
  std::string out;
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) {
      out += c;
    } else {
      constexpr char kDigits[] = "0123456789abcdef";
      out += "\\x";
      out += kDigits[u >> 4];
      out += kDigits[u & 15];
    }
  }
  return out;
}

// A path segment with its %-escapes undone ('+' stays '+'); nullopt when
// one is malformed (written again here, from docs/server.md).
std::optional<std::string> Unescape(std::string_view segment) {
  auto digit = [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; };
  std::string out;
  for (std::size_t i = 0; i < segment.size(); ++i) {
    if (segment[i] != '%') {
      out += segment[i];
      continue;
    }
    if (i + 2 >= segment.size() || !digit(segment[i + 1]) || !digit(segment[i + 2])) {
      return std::nullopt;
    }
    out += static_cast<char>(std::stoi(std::string(segment.substr(i + 1, 2)), nullptr, 16));
    i += 2;
  }
  return out;
}

// An occurrence's id, "<schedule id>@<nominal ms>": a valid schedule id,
// then the time as OccurrenceId writes it (decimal digits, no leading zero,
// at most INT64_MAX) (docs/schedules.md).
bool IsOccurrenceId(std::string_view id) {
  const std::size_t at = id.find('@');
  if (at == std::string_view::npos || !IsValidId(id.substr(0, at))) return false;
  const std::string_view digits = id.substr(at + 1);
  if (digits.empty() || digits.size() > 19 || (digits[0] == '0' && digits.size() > 1)) return false;
  for (char c : digits) {
    if (c < '0' || c > '9') return false;
  }
  return digits.size() < 19 || digits <= "9223372036854775807";
}

// A flow key: 1..260 printable ASCII characters other than space, '/',
// '?', '#', '%', '"' and '\', not ending in an action (docs/flows.md).
bool IsValidFlowKey(std::string_view key) {
  if (key.empty() || key.size() > 260 || EndsWith(key, ":pause") || EndsWith(key, ":resume")) {
    return false;
  }
  for (char c : key) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f || std::string_view("/?#%\"\\").find(c) != std::string_view::npos) {
      return false;
    }
  }
  return true;
}

// Whether "GET, POST" lists `method` (written again here).
bool Lists(std::string_view methods, std::string_view method) {
  while (!methods.empty()) {
    const std::size_t comma = methods.find(", ");
    if (methods.substr(0, comma) == method) return true;
    if (comma == std::string_view::npos) break;
    methods.remove_prefix(comma + 2);
  }
  return false;
}

// The router's answer for `path` against what the path says, and the
// methods and path id check Admit runs on it.
void CheckRoute(std::string_view path, std::string_view method, const server::Route& route) {
  const std::string where = " for path \"" + Hex(path) + "\"";
  const std::string_view label = server::RouteTemplate(route.kind);
  const std::string_view allowed = server::AllowedMethods(route.kind);
  std::string_view expected_methods;
  for (const Fixed& f : kFixed) {
    // Both ways: this path, this route; this route, this path and label.
    Require((path == f.path) == (route.kind == f.kind),
            "route " + std::string(label) + where + " (expected " + std::string(f.path) + ")");
    if (route.kind == f.kind) {
      Require(label == f.path, "label " + std::string(label) + where);
      expected_methods = f.methods;
    }
  }
  // The variable route the path names: the longest action suffix its
  // prefix has (the id keeps at least one character before it).
  const Variable* named = nullptr;
  for (const Variable& v : kVariable) {
    if (!StartsWith(path, v.prefix) || path.size() <= v.prefix.size()) continue;
    const std::string_view rest = path.substr(v.prefix.size());
    if (!v.suffix.empty() && !(rest.size() > v.suffix.size() && EndsWith(rest, v.suffix))) continue;
    if (named == nullptr || v.suffix.size() > named->suffix.size()) named = &v;
  }
  if (named != nullptr) {
    Require(route.kind == named->kind,
            "route " + std::string(label) + where + " (expected " + std::string(named->tmpl) + ")");
    Require(label == named->tmpl, "label " + std::string(label) + where);
    expected_methods = named->methods;
    std::string_view raw = path.substr(named->prefix.size());
    raw.remove_suffix(named->suffix.size());
    const std::optional<std::string> id = Unescape(raw);
    Require(route.malformed_id == !id,
            "malformed_id " + std::to_string(route.malformed_id) + where);
    if (id) Require(route.id == *id, "id \"" + Hex(route.id) + "\"" + where);
  } else {
    for (const Variable& v : kVariable) {
      Require(route.kind != v.kind, "route " + std::string(label) + where);
    }
  }
  if (route.kind == Kind::kNone) Require(label == "other", "label " + std::string(label) + where);
  // The methods: as documented, each allowed exactly when listed.
  Require(allowed == expected_methods, "methods \"" + std::string(allowed) + "\"" + where);
  Require(server::MethodAllowed(route.kind, method) == Lists(expected_methods, method),
          "method " + Hex(method) + where);
  // The path's id, accepted exactly when valid.
  const server::Status id_check = server::CheckPathId(route);
  if (named == nullptr) {
    Require(id_check.ok(), "an id check without an id" + where);
    return;
  }
  bool valid = false;
  std::string_view reason = "invalid_id";
  switch (route.kind) {
    case Kind::kTimer:
    case Kind::kTimerRetry:
      valid = !route.malformed_id && (IsValidId(route.id) || IsOccurrenceId(route.id));
      break;
    case Kind::kFlow:
    case Kind::kFlowPause:
    case Kind::kFlowResume:
      valid = !route.malformed_id && IsValidFlowKey(route.id);
      reason = "invalid_flow";
      break;
    default:
      valid = !route.malformed_id && IsValidId(route.id);
      break;
  }
  Require(id_check.ok() == valid,
          std::string(valid ? "a valid id refused: " : "an invalid id accepted: ") +
              Hex(route.id) + where);
  if (!id_check.ok()) {
    CheckError(id_check, "path id");
    Require(id_check.reason() == reason, "reason " + id_check.reason() + where);
  }
}

// Api::Admit's and Api::Handle's routing of a request, then the first
// steps of the handler it picks (server/api/api.cc; the handlers themselves
// are coroutines, which clang 14 cannot compile with ASan).
void Route(const http::request<http::string_body>& req) {
  Guard(req);
  const std::string_view target = req.target();
  const std::size_t q = target.find('?');
  const std::string_view path = target.substr(0, q);
  const std::string_view query =
      q == std::string_view::npos ? std::string_view() : target.substr(q + 1);
  const server::Route route = server::MatchRoute(path);
  CheckRoute(path, req.method_string(), route);
  // Admit answers 405 or 400 before a handler runs.
  if (!server::MethodAllowed(route.kind, req.method_string()) || !server::CheckPathId(route).ok()) {
    return;
  }
  const http::verb method = req.method();
  // The body each handler parses (server/api/timer_handlers.cc).
  enum class Body { kNone, kTimer, kBatch, kReschedule } body_kind = Body::kNone;
  switch (route.kind) {
    case Kind::kTimers:
      if (method == http::verb::get) {
        const auto parsed = server::ParseListQuery(query);
        if (!parsed.ok()) CheckError(parsed.status(), "list query");
      } else {
        body_kind = Body::kTimer;
      }
      break;
    case Kind::kBatch:
      body_kind = Body::kBatch;
      break;
    case Kind::kTimer:
      if (method == http::verb::get) {
        const auto show = server::ParseGetQuery(query);
        if (!show.ok()) CheckError(show.status(), "get query");
      }
      if (method == http::verb::patch) body_kind = Body::kReschedule;
      break;
    default:
      break;
  }
  if (body_kind == Body::kNone) return;
  if (body_kind != Body::kReschedule) {
    // A create's trace context (api/trace_headers.h): refused with a clear
    // error, or kept in version 00's form with a bounded tracestate.
    const auto trace = server::RequestTrace(req);
    if (!trace.ok()) {
      CheckError(trace.status(), "trace context");
    } else if (!trace->empty()) {
      const std::string& p = trace->traceparent;
      bool form = p.size() == 55 && p.compare(0, 3, "00-") == 0 && p[35] == '-' && p[52] == '-' &&
                  p[53] == '0' && (p[54] == '0' || p[54] == '1');
      for (std::size_t i : {std::size_t{3}, std::size_t{36}}) {
        const std::size_t end = i == 3 ? 35 : 52;
        for (std::size_t j = i; j < end; ++j) {
          form = form && ((p[j] >= '0' && p[j] <= '9') || (p[j] >= 'a' && p[j] <= 'f'));
        }
      }
      Require(form, "a stored traceparent not in version 00's form: " + p);
      Require(trace->tracestate.size() <= server::kMaxTracestateBytes, "a tracestate over its bound");
    } else {
      Require(trace->tracestate.empty(), "a tracestate kept without a traceparent");
    }
  }
  const auto body = server::ParseJsonBody(req.body());
  if (!body.ok()) return CheckError(body.status(), "body");
  constexpr std::int64_t kNowMs = 1'700'000'000'000;
  if (body_kind == Body::kTimer) {
    const auto spec = server::ParseTimerSpec(*body, server::ApiLimits{}, kNowMs);
    if (!spec.ok()) CheckError(spec.status(), "timer");
  } else if (body_kind == Body::kBatch) {
    const auto specs = server::ParseBatch(*body, server::ApiLimits{}, kNowMs);
    if (!specs.ok()) CheckError(specs.status(), "batch");
  } else {
    const auto at = server::ParseReschedule(*body, server::ApiLimits{}, kNowMs);
    if (!at.ok()) CheckError(at.status(), "reschedule");
  }
}

void CheckRequest(const http::request_parser<http::string_body>& parser,
                  std::size_t header_bytes, std::size_t body_limit) {
  const auto& req = parser.get();
  Require(!req.method_string().empty(), "no method; target \"" + std::string(req.target()) + "\" body \"" + req.body() + "\"");
  const std::string_view target = req.target();
  Require(!target.empty(), "no target");
  for (char c : target) {
    const auto u = static_cast<unsigned char>(c);
    Require(u > 0x20 && u != 0x7f, "a space or control character in the target");
  }
  Require(header_bytes <= kHeaderLimit,
          "a header of " + std::to_string(header_bytes) + " bytes accepted");
  Require(req.body().size() <= body_limit, "a body over the limit accepted");
  if (parser.content_length()) {
    Require(req.body().size() == *parser.content_length(),
            "body size differs from Content-Length");
  }
  Route(req);
}

void FuzzOne(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return;
  const std::size_t body_limit = data[0] == 0 ? 16 * 1024 * 1024 : data[0] * 64u;
  const std::size_t piece = data[1] == 0 ? size : data[1];
  const std::string_view input(reinterpret_cast<const char*>(data) + 2, size - 2);

  beast::flat_buffer buffer;
  std::size_t fed = 0;
  // One request after another, as HttpServer::Serve reads a connection.
  for (int request = 0; request < 64; ++request) {
    http::request_parser<http::string_body> parser;
    parser.body_limit(body_limit);
    parser.header_limit(kHeaderLimit);
    // Not eager until the header is done, so that a put stops there and
    // the header's size is known; then as the server reads (http::read).
    parser.eager(false);
    std::size_t header_bytes = 0;
    std::size_t used = 0;  // bytes this parser consumed
    boost::system::error_code ec;
    while (!parser.is_done()) {
      if (buffer.size() == 0 || ec == http::error::need_more) {
        if (fed == input.size()) {
          // The client closed. Between requests that is the end of the
          // connection; inside one, what a read sees at end of stream.
          if (used == 0 && buffer.size() == 0) return;
          parser.put_eof(ec);
          if (ec || !parser.is_done()) return;
          break;
        }
        const std::size_t n = std::min(piece, input.size() - fed);
        auto dst = buffer.prepare(n);
        std::memcpy(dst.data(), input.data() + fed, n);
        buffer.commit(n);
        fed += n;
      }
      const bool had_header = parser.is_header_done();
      const std::size_t n = parser.put(buffer.data(), ec);
      buffer.consume(n);
      used += n;
      if (!had_header && parser.is_header_done()) {
        header_bytes = used;
        parser.eager(true);
      }
      if (ec && ec != http::error::need_more) return;  // the server answers 400/413
      Require(n > 0 || ec == http::error::need_more || parser.is_done(),
              "the parser neither consumed input nor asked for more");
    }
    CheckRequest(parser, header_bytes, body_limit);
    if (!parser.get().keep_alive()) return;
  }
}

}  // namespace
}  // namespace tickwheel::testing

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  tickwheel::testing::FuzzOne(data, size);
  return 0;
}
