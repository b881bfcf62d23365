// SPDX-License-Identifier: Apache-2.0
#include "api/api.h"

#include <optional>

#include "api/timer_request.h"

namespace tickwheel::server {

namespace asio = boost::asio;
namespace http = boost::beast::http;

Route MatchRoute(std::string_view path) {
  constexpr std::string_view kTimers = "/v1/timers";
  constexpr std::string_view kRetry = ":retry";
  if (path == "/healthz") return {Route::Kind::kHealth};
  if (path == "/metrics") return {Route::Kind::kMetrics};
  if (path == "/v1/whoami") return {Route::Kind::kWhoami};
  if (path == kTimers) return {Route::Kind::kTimers};
  if (path == "/v1/timers:batch") return {Route::Kind::kBatch};
  if (path == "/v1/timers:retry-failed") return {Route::Kind::kRetryFailed};
  if (path == "/v1/timers:delete-failed") return {Route::Kind::kDeleteFailed};
  if (path == "/v1/stats") return {Route::Kind::kStats};
  if (path == "/v1/stats/series") return {Route::Kind::kStatsSeries};
  if (path == "/v1/cluster") return {Route::Kind::kCluster};
  if (path == "/v1/admin/backup") return {Route::Kind::kAdminBackup};
  if (path == "/v1/admin/export") return {Route::Kind::kAdminExport};
  if (path == "/v1/admin/import") return {Route::Kind::kAdminImport};
  if (path == "/v1/admin/delivery:pause") return {Route::Kind::kAdminDeliveryPause};
  if (path == "/v1/admin/delivery:resume") return {Route::Kind::kAdminDeliveryResume};
  if (path == "/v1/admin/writes:pause") return {Route::Kind::kAdminWritesPause};
  if (path == "/v1/admin/writes:resume") return {Route::Kind::kAdminWritesResume};
  if (path.size() <= kTimers.size() + 1 || path.substr(0, kTimers.size() + 1) != "/v1/timers/") {
    return {};
  }
  std::string_view id = path.substr(kTimers.size() + 1);
  if (id.size() > kRetry.size() && id.substr(id.size() - kRetry.size()) == kRetry) {
    id.remove_suffix(kRetry.size());
    return {Route::Kind::kTimerRetry, std::string(id)};
  }
  return {Route::Kind::kTimer, std::string(id)};
}

std::string_view RouteTemplate(Route::Kind kind) {
  switch (kind) {
    case Route::Kind::kHealth: return "/healthz";
    case Route::Kind::kMetrics: return "/metrics";
    case Route::Kind::kWhoami: return "/v1/whoami";
    case Route::Kind::kTimers: return "/v1/timers";
    case Route::Kind::kBatch: return "/v1/timers:batch";
    case Route::Kind::kTimer: return "/v1/timers/{id}";
    case Route::Kind::kTimerRetry: return "/v1/timers/{id}:retry";
    case Route::Kind::kRetryFailed: return "/v1/timers:retry-failed";
    case Route::Kind::kDeleteFailed: return "/v1/timers:delete-failed";
    case Route::Kind::kStats: return "/v1/stats";
    case Route::Kind::kStatsSeries: return "/v1/stats/series";
    case Route::Kind::kCluster: return "/v1/cluster";
    case Route::Kind::kNone: return "other";
  }
  return "other";
}

namespace {

const char* Allowed(Route::Kind kind) {
  switch (kind) {
    case Route::Kind::kHealth:
    case Route::Kind::kMetrics:
    case Route::Kind::kWhoami:
    case Route::Kind::kStats:
    case Route::Kind::kStatsSeries:
    case Route::Kind::kCluster:
    case Route::Kind::kAdminExport: return "GET";
    case Route::Kind::kTimers: return "GET, POST";
    case Route::Kind::kBatch:
    case Route::Kind::kTimerRetry:
    case Route::Kind::kRetryFailed:
    case Route::Kind::kDeleteFailed:
    case Route::Kind::kAdminBackup:
    case Route::Kind::kAdminImport:
    case Route::Kind::kAdminDeliveryPause:
    case Route::Kind::kAdminDeliveryResume:
    case Route::Kind::kAdminWritesPause:
    case Route::Kind::kAdminWritesResume: return "POST";
    case Route::Kind::kTimer: return "GET, PATCH, DELETE";
    case Route::Kind::kNone: return "";
  }
  return "";
}

HttpResponse MethodNotAllowed(const HttpRequest& req, std::string_view path, const char* allow) {
  HttpResponse res = ErrorResponse(
      Status(StatusCode::kInvalidArgument, "method_not_allowed",
             std::string(req.method_string()) + " is not allowed on " + std::string(path) +
                 "; allowed: " + allow));
  res.result(http::status::method_not_allowed);
  res.set(http::field::allow, allow);
  return res;
}

bool IsAdmin(Route::Kind kind) {
  switch (kind) {
    case Route::Kind::kAdminBackup:
    case Route::Kind::kAdminExport:
    case Route::Kind::kAdminImport:
    case Route::Kind::kAdminDeliveryPause:
    case Route::Kind::kAdminDeliveryResume:
    case Route::Kind::kAdminWritesPause:
    case Route::Kind::kAdminWritesResume: return true;
    default: return false;
  }
}

// A client's write: refused while writes are paused.
bool IsClientWrite(Route::Kind kind, http::verb method) {
  switch (kind) {
    case Route::Kind::kTimers: return method == http::verb::post;
    case Route::Kind::kTimer: return method == http::verb::patch || method == http::verb::delete_;
    case Route::Kind::kBatch:
    case Route::Kind::kTimerRetry:
    case Route::Kind::kRetryFailed:
    case Route::Kind::kDeleteFailed: return method == http::verb::post;
    default: return false;
  }
}

}  // namespace

Api::Api(Handlers handlers, Metrics& metrics, Gauges gauges, HealthDetail health,
         ApiAccess access, const std::atomic<bool>* writes_paused)
    : timers_(handlers.timers),
      dead_letters_(handlers.dead_letters),
      stats_(handlers.stats),
      admin_(handlers.admin),
      metrics_(metrics),
      gauges_(std::move(gauges)),
      health_(std::move(health)),
      access_(std::move(access)),
      writes_paused_(writes_paused) {}

asio::awaitable<HttpResponse> Api::Handle(HttpRequest& req) {
  const Route route = MatchRoute(req.target().substr(0, req.target().find('?')));
  HttpResponse res = co_await Answer(req, route);
  metrics_.http_requests.Count(RouteTemplate(route.kind), res.result_int());
  co_return res;
}

asio::awaitable<HttpResponse> Api::Answer(HttpRequest& req, const Route& route) {
  const std::string_view target = req.target();
  const std::size_t q = target.find('?');
  const std::string_view path = target.substr(0, q);
  const std::string_view query = q == std::string_view::npos ? "" : target.substr(q + 1);
  const http::verb method = req.method();
  std::optional<HttpResponse> res;  // stays empty if the method is not the route's
  // Who asks, before anything is looked at.
  Role role = Role::kAnonymous;
  const bool v1 = path == "/v1" || path.substr(0, 4) == "/v1/";
  if (v1 || (route.kind == Route::Kind::kMetrics && access_.metrics_auth)) {
    Result<Role> who = access_.auth.Authenticate(req);
    Status allowed = who.ok() && v1 && route.kind != Route::Kind::kNone
                         ? TokenAuth::Authorize(*who, method)
                         : who.status();
    if (!allowed.ok()) co_return AuthErrorResponse(allowed);
    role = *who;
    if (IsAdmin(route.kind) && role == Role::kRead) {
      metrics_.http_client_errors.fetch_add(1, std::memory_order_relaxed);
      co_return AuthErrorResponse(Status(StatusCode::kPermissionDenied, "forbidden",
                                         std::string(path) + " needs an admin token"));
    }
  }
  if (writes_paused_ != nullptr && writes_paused_->load() && IsClientWrite(route.kind, method)) {
    HttpResponse paused = ErrorResponse(
        Status(StatusCode::kUnavailable, "writes_paused",
               "this server takes no writes now (an operator paused them, e.g. to move its "
               "timers to another store); try again, or at the new address"));
    co_return paused;
  }
  // Header values only for an admin token that asks for them.
  const bool may_see_headers = role == Role::kAdmin;
  // (No co_await inside ?: and one per statement: GCC 12 miscompiles them.)
  switch (route.kind) {
    case Route::Kind::kNone:
      // The console's paths reach here only when it is off (serve/server.cc
      // serves them first with --ui).
      if (path == "/ui" || path.substr(0, 4) == "/ui/") {
        res = ErrorResponse(Status::NotFound(
            "the web console is off: start the server with --ui (tickwheel serve --ui) to "
            "serve it at /ui/"));
      } else {
        res = ErrorResponse(Status::NotFound("no route " + std::string(path) +
                                             " (the API is under /v1/timers)"));
      }
      break;
    case Route::Kind::kHealth:
      if (method != http::verb::get) break;
      res = JsonResponse(draining_.load() ? 503 : 200,
                         std::string(draining_.load() ? R"({"status":"draining")" : R"({"status":"ok")") +
                             (health_ ? health_() : "") + "}");
      break;
    case Route::Kind::kMetrics:
      if (method != http::verb::get) break;
      res = JsonResponse(200, metrics_.Render(gauges_));
      res->set(http::field::content_type, "text/plain; version=0.0.4");
      break;
    case Route::Kind::kWhoami:
      if (method != http::verb::get) break;
      res = JsonResponse(200, "{\"role\":\"" + std::string(RoleName(role)) + "\"}");
      break;
    case Route::Kind::kTimers:
      if (method == http::verb::post) {
        res = co_await timers_.Create(req);
      } else if (method == http::verb::get) {
        res = timers_.List(query, may_see_headers);
      }
      break;
    case Route::Kind::kBatch:
      if (method == http::verb::post) res = co_await timers_.CreateBatch(req);
      break;
    case Route::Kind::kRetryFailed:
      if (method == http::verb::post) res = co_await dead_letters_.RetryFailed(req);
      break;
    case Route::Kind::kDeleteFailed:
      if (method == http::verb::post) res = co_await dead_letters_.DeleteFailed(req);
      break;
    case Route::Kind::kStats:
      if (method == http::verb::get) res = stats_.Stats();
      break;
    case Route::Kind::kStatsSeries:
      if (method == http::verb::get) res = stats_.Series();
      break;
    case Route::Kind::kCluster:
      if (method == http::verb::get) res = stats_.Cluster();
      break;
    case Route::Kind::kAdminBackup:
      if (method == http::verb::post) res = co_await admin_.Backup(req);
      break;
    case Route::Kind::kAdminExport:
      if (method == http::verb::get) res = co_await admin_.Export(query);
      break;
    case Route::Kind::kAdminImport:
      if (method == http::verb::post) res = co_await admin_.Import(req);
      break;
    case Route::Kind::kAdminDeliveryPause:
    case Route::Kind::kAdminDeliveryResume:
      if (method == http::verb::post) {
        res = co_await admin_.Delivery(route.kind == Route::Kind::kAdminDeliveryPause);
      }
      break;
    case Route::Kind::kAdminWritesPause:
    case Route::Kind::kAdminWritesResume:
      if (method == http::verb::post) {
        res = admin_.Writes(route.kind == Route::Kind::kAdminWritesPause);
      }
      break;
    case Route::Kind::kTimer:
    case Route::Kind::kTimerRetry: {
      if (Status s = ValidateId(route.id, "id"); !s.ok()) {
        res = ErrorResponse(s);
      } else if (route.kind == Route::Kind::kTimerRetry) {
        if (method == http::verb::post) res = co_await timers_.Retry(route.id);
      } else if (method == http::verb::get) {
        res = timers_.Get(route.id, query, may_see_headers);
      } else if (method == http::verb::patch) {
        res = co_await timers_.Reschedule(req, route.id);
      } else if (method == http::verb::delete_) {
        res = co_await timers_.Cancel(route.id);
      }
      break;
    }
  }
  if (!res) res = MethodNotAllowed(req, path, Allowed(route.kind));
  co_return std::move(*res);
}

}  // namespace tickwheel::server
