// SPDX-License-Identifier: Apache-2.0
#include "api/api.h"

#include <optional>

#include "api/openapi.h"

namespace tickwheel::server {

namespace asio = boost::asio;
namespace http = boost::beast::http;

namespace {

HttpResponse MethodNotAllowed(const HttpRequest& req, std::string_view path, const char* allow) {
  HttpResponse res = ErrorResponse(
      Status(StatusCode::kInvalidArgument, "method_not_allowed",
             std::string(req.method_string()) + " is not allowed on " + std::string(path) +
                 "; allowed: " + allow));
  res.result(http::status::method_not_allowed);
  res.set(http::field::allow, allow);
  return res;
}

bool HasBody(const HttpRequest& head) {
  if (head.chunked()) return true;
  const std::string_view length = head[http::field::content_length];
  return !length.empty() && length.find_first_not_of('0') != std::string_view::npos;
}

}  // namespace

Api::Api(Handlers handlers, Metrics& metrics, Gauges gauges, HealthDetail health,
         ApiAccess access, StaticFiles static_files, const std::atomic<bool>* writes_paused)
    : timers_(handlers.timers),
      dead_letters_(handlers.dead_letters),
      schedules_(handlers.schedules),
      stats_(handlers.stats),
      flows_(handlers.flows),
      admin_(handlers.admin),
      metrics_(metrics),
      gauges_(std::move(gauges)),
      health_(std::move(health)),
      access_(std::move(access)),
      static_files_(std::move(static_files)),
      writes_paused_(writes_paused) {}

Admission Api::Answer(Route::Kind kind, HttpResponse res) {
  metrics_.http_requests.Count(RouteTemplate(kind), res.result_int());
  return Admission{std::move(res), {}};
}

Admission Api::Admit(const HttpRequest& head) {
  const std::string_view target = head.target();
  const std::string_view path = target.substr(0, target.find('?'));
  const http::verb method = head.method();
  const Route route = MatchRoute(path);
  // The health check answers whoever asks, however (a load balancer's
  // probe may name the node as it likes).
  if (route.kind == Route::Kind::kHealth && method == http::verb::get) {
    const bool draining = draining_.load();
    return Answer(route.kind, JsonResponse(draining ? 503 : 200,
                               std::string(draining ? R"({"status":"draining")" : R"({"status":"ok")") +
                                   (health_ ? health_() : "") + "}"));
  }
  // A web page must not drive the server: Host, then Origin.
  if (Status s = access_.guard.CheckHost(head); !s.ok()) return Answer(route.kind, ErrorResponse(s));
  Result<std::optional<std::string>> cross_origin = access_.guard.CheckOrigin(head);
  if (!cross_origin.ok()) return Answer(route.kind, ErrorResponse(cross_origin.status()));
  std::optional<std::string> cors = std::move(*cross_origin);
  if (cors && method == http::verb::options) {
    return Answer(route.kind, RequestGuard::Preflight(*cors, AllowedMethods(route.kind)));
  }
  if (static_files_) {
    if (std::optional<HttpResponse> page = static_files_(head)) return Answer(route.kind, std::move(*page));
  }
  auto refuse = [&](HttpResponse res) {
    if (cors) RequestGuard::AllowOrigin(res, *cors);
    return Answer(route.kind, std::move(res));
  };
  // Who asks, before anything is looked at.
  Role role = Role::kAnonymous;
  // The description is public, like /healthz (but checked for Host and
  // Origin like every other route).
  const bool v1 = (path == "/v1" || path.substr(0, 4) == "/v1/") &&
                  route.kind != Route::Kind::kOpenApi;
  if (v1 || (route.kind == Route::Kind::kMetrics && access_.metrics_auth)) {
    Result<Role> who = access_.auth.Authenticate(head);
    Status allowed = who.ok() && v1 && route.kind != Route::Kind::kNone
                         ? TokenAuth::Authorize(*who, method)
                         : who.status();
    if (!allowed.ok()) return refuse(AuthErrorResponse(allowed));
    role = *who;
    if (AdminOnly(route.kind) && role == Role::kRead) {
      return refuse(AuthErrorResponse(Status(StatusCode::kPermissionDenied, "forbidden",
                                             std::string(path) + " needs an admin token")));
    }
  }
  if (route.kind == Route::Kind::kNone) {
    // The console's paths reach here only when it is off (static_files
    // serves them with --ui).
    if (path == "/ui" || path.substr(0, 4) == "/ui/") {
      return refuse(ErrorResponse(Status::NotFound(
          "the web console is off: start the server with --ui (tickwheel serve --ui) to serve it "
          "at /ui/")));
    }
    return refuse(ErrorResponse(
        Status::NotFound("no route " + std::string(path) +
                         " (the API is under /v1/timers, /v1/schedules and /v1/flows)")));
  }
  const char* allowed = AllowedMethods(route.kind);
  if (!MethodAllowed(route.kind, head.method_string())) return refuse(MethodNotAllowed(head, path, allowed));
  if (Status s = RequestGuard::CheckContentType(head, HasBody(head)); !s.ok()) {
    return refuse(ErrorResponse(s));
  }
  if (Status s = CheckPathId(route); !s.ok()) return refuse(ErrorResponse(s));
  if (v1 && method != http::verb::get && method != http::verb::head && draining_.load()) {
    return refuse(ErrorResponse(Status(
        StatusCode::kUnavailable, "draining",
        "the server is shutting down (draining) and takes no more changes; send it to another "
        "node, or again once this one is back")));
  }
  // A client's change (not an operator's admin call) while writes are
  // paused for a move.
  if (v1 && method != http::verb::get && method != http::verb::head && !AdminOnly(route.kind) &&
      writes_paused_ != nullptr && writes_paused_->load()) {
    return refuse(ErrorResponse(
        Status(StatusCode::kUnavailable, "writes_paused",
               "this server takes no writes now (an operator paused them, e.g. to move its "
               "timers to another store); try again, or at the new address")));
  }
  return Admission{std::nullopt, [this, route, role, cors](HttpRequest& req) {
                     return Handle(req, route, role, cors);
                   }};
}

asio::awaitable<HttpResponse> Api::Handle(HttpRequest& req, Route route, Role role,
                                          std::optional<std::string> cors_origin) {
  const std::string_view target = req.target();
  const std::size_t q = target.find('?');
  const std::string_view query = q == std::string_view::npos ? "" : target.substr(q + 1);
  const http::verb method = req.method();
  HttpResponse res;
  // Header values only for an admin token that asks for them.
  const bool may_see_secrets = role == Role::kAdmin;
  // (No co_await inside ?: and one per statement: GCC 12 miscompiles them.)
  // Admit checked the method: each case handles the ones AllowedMethods
  // lists for its route.
  switch (route.kind) {
    case Route::Kind::kNone:
    case Route::Kind::kHealth:
      break;  // answered by Admit
    case Route::Kind::kMetrics:
      res = JsonResponse(200, metrics_.Render(gauges_));
      res.set(http::field::content_type, "text/plain; version=0.0.4");
      break;
    case Route::Kind::kWhoami:
      res = JsonResponse(200, "{\"role\":\"" + std::string(RoleName(role)) + "\"}");
      break;
    case Route::Kind::kTimers:
      if (method == http::verb::post) {
        res = co_await timers_.Create(req);
      } else {
        res = co_await timers_.List(query, may_see_secrets);
      }
      break;
    case Route::Kind::kBatch:
      res = co_await timers_.CreateBatch(req);
      break;
    case Route::Kind::kRetryFailed:
      res = co_await dead_letters_.RetryFailed(req);
      break;
    case Route::Kind::kDeleteFailed:
      res = co_await dead_letters_.DeleteFailed(req);
      break;
    case Route::Kind::kStats:
      res = co_await stats_.Stats();
      break;
    case Route::Kind::kStatsSeries:
      res = stats_.Series();
      break;
    case Route::Kind::kCluster:
      res = co_await stats_.Cluster();
      break;
    case Route::Kind::kTimerRetry:
      res = co_await timers_.Retry(route.id);
      break;
    case Route::Kind::kSchedules:
      if (method == http::verb::post) {
        res = co_await schedules_.Create(req);
      } else {
        res = co_await schedules_.List(query, may_see_secrets);
      }
      break;
    case Route::Kind::kSchedule:
      if (method == http::verb::get) {
        res = co_await schedules_.Get(route.id, query, may_see_secrets);
      } else if (method == http::verb::patch) {
        res = co_await schedules_.Patch(req, route.id);
      } else {
        res = co_await schedules_.Delete(route.id);
      }
      break;
    case Route::Kind::kSchedulePause:
      res = co_await schedules_.Pause(route.id);
      break;
    case Route::Kind::kScheduleResume:
      res = co_await schedules_.Resume(route.id);
      break;
    case Route::Kind::kScheduleTrigger:
      res = co_await schedules_.Trigger(route.id);
      break;
    case Route::Kind::kScheduleBackfill:
      res = co_await schedules_.Backfill(req, route.id);
      break;
    case Route::Kind::kFlows:
      res = co_await flows_.List(query);
      break;
    case Route::Kind::kFlowPause:
      res = co_await flows_.SetPaused(route.id, true);
      break;
    case Route::Kind::kFlowResume:
      res = co_await flows_.SetPaused(route.id, false);
      break;
    case Route::Kind::kFlow:
      if (method == http::verb::get) {
        res = co_await flows_.Get(route.id);
      } else if (method == http::verb::put) {
        res = co_await flows_.Put(req, route.id);
      } else {
        res = co_await flows_.Delete(route.id);
      }
      break;
    case Route::Kind::kOpenApi:
      res = OpenApiResponse(req);
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
      if (method == http::verb::get) {
        res = co_await timers_.Get(route.id, query, may_see_secrets);
      } else if (method == http::verb::patch) {
        res = co_await timers_.Reschedule(req, route.id);
      } else {
        res = co_await timers_.Cancel(route.id);
      }
      break;
  }
  metrics_.http_requests.Count(RouteTemplate(route.kind), res.result_int());
  if (cors_origin) RequestGuard::AllowOrigin(res, *cors_origin);
  co_return res;
}

}  // namespace tickwheel::server
