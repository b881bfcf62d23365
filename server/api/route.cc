// SPDX-License-Identifier: Apache-2.0
#include "api/route.h"

#include <optional>
#include <utility>

#include "api/list_query.h"
#include "api/timer_request.h"
#include "timer/flow_key.h"

namespace tickwheel::server {

namespace {

Status MalformedIdEscape() {
  return Status::Invalid("invalid_id",
                         "the id in the path has a malformed %-escape (a '%' must be followed "
                         "by two hex digits)",
                         "id");
}

// A route with the id `raw` of its path, decoded.
Route WithId(Route::Kind kind, std::string_view raw) {
  Route route{kind};
  if (std::optional<std::string> id = PercentDecode(raw, /*plus_is_space=*/false)) {
    route.id = std::move(*id);
  } else {
    route.id = std::string(raw);
    route.malformed_id = true;
  }
  return route;
}

Route MatchFlowRoute(std::string_view rest) {
  Route route{Route::Kind::kFlow};
  for (auto [suffix, kind] : {std::pair{std::string_view(":pause"), Route::Kind::kFlowPause},
                              std::pair{std::string_view(":resume"), Route::Kind::kFlowResume}}) {
    if (rest.size() > suffix.size() && rest.substr(rest.size() - suffix.size()) == suffix) {
      rest.remove_suffix(suffix.size());
      route.kind = kind;
      break;
    }
  }
  return WithId(route.kind, rest);
}

// Whether `allowed` ("GET, POST") lists `method`.
bool Lists(std::string_view allowed, std::string_view method) {
  while (!allowed.empty()) {
    const std::size_t comma = allowed.find(',');
    std::string_view one = allowed.substr(0, comma);
    while (!one.empty() && one.front() == ' ') one.remove_prefix(1);
    if (one == method) return true;
    if (comma == std::string_view::npos) break;
    allowed.remove_prefix(comma + 1);
  }
  return false;
}

}  // namespace

Route MatchRoute(std::string_view path) {
  constexpr std::string_view kFlows = "/v1/flows";
  if (path == kFlows) return {Route::Kind::kFlows};
  if (path.size() > kFlows.size() + 1 && path.substr(0, kFlows.size() + 1) == "/v1/flows/") {
    return MatchFlowRoute(path.substr(kFlows.size() + 1));
  }
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
  if (path == "/v1/openapi.json") return {Route::Kind::kOpenApi};
  if (path == "/v1/admin/backup") return {Route::Kind::kAdminBackup};
  if (path == "/v1/admin/export") return {Route::Kind::kAdminExport};
  if (path == "/v1/admin/import") return {Route::Kind::kAdminImport};
  if (path == "/v1/admin/delivery:pause") return {Route::Kind::kAdminDeliveryPause};
  if (path == "/v1/admin/delivery:resume") return {Route::Kind::kAdminDeliveryResume};
  if (path == "/v1/admin/writes:pause") return {Route::Kind::kAdminWritesPause};
  if (path == "/v1/admin/writes:resume") return {Route::Kind::kAdminWritesResume};
  constexpr std::string_view kSchedules = "/v1/schedules";
  if (path == kSchedules) return {Route::Kind::kSchedules};
  if (path.size() > kSchedules.size() + 1 && path.substr(0, kSchedules.size() + 1) == "/v1/schedules/") {
    std::string_view id = path.substr(kSchedules.size() + 1);
    constexpr std::pair<std::string_view, Route::Kind> kActions[] = {
        {":pause", Route::Kind::kSchedulePause},
        {":resume", Route::Kind::kScheduleResume},
        {":trigger", Route::Kind::kScheduleTrigger},
        {":backfill", Route::Kind::kScheduleBackfill}};
    for (const auto& [suffix, kind] : kActions) {
      if (id.size() > suffix.size() && id.substr(id.size() - suffix.size()) == suffix) {
        return WithId(kind, id.substr(0, id.size() - suffix.size()));
      }
    }
    return WithId(Route::Kind::kSchedule, id);
  }
  if (path.size() <= kTimers.size() + 1 || path.substr(0, kTimers.size() + 1) != "/v1/timers/") {
    return {};
  }
  std::string_view id = path.substr(kTimers.size() + 1);
  if (id.size() > kRetry.size() && id.substr(id.size() - kRetry.size()) == kRetry) {
    id.remove_suffix(kRetry.size());
    return WithId(Route::Kind::kTimerRetry, id);
  }
  return WithId(Route::Kind::kTimer, id);
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
    case Route::Kind::kSchedules: return "/v1/schedules";
    case Route::Kind::kSchedule: return "/v1/schedules/{id}";
    case Route::Kind::kSchedulePause: return "/v1/schedules/{id}:pause";
    case Route::Kind::kScheduleResume: return "/v1/schedules/{id}:resume";
    case Route::Kind::kScheduleTrigger: return "/v1/schedules/{id}:trigger";
    case Route::Kind::kScheduleBackfill: return "/v1/schedules/{id}:backfill";
    case Route::Kind::kFlows: return "/v1/flows";
    case Route::Kind::kFlow: return "/v1/flows/{key}";
    case Route::Kind::kFlowPause: return "/v1/flows/{key}:pause";
    case Route::Kind::kFlowResume: return "/v1/flows/{key}:resume";
    case Route::Kind::kOpenApi: return "/v1/openapi.json";
    case Route::Kind::kAdminBackup: return "/v1/admin/backup";
    case Route::Kind::kAdminExport: return "/v1/admin/export";
    case Route::Kind::kAdminImport: return "/v1/admin/import";
    case Route::Kind::kAdminDeliveryPause: return "/v1/admin/delivery:pause";
    case Route::Kind::kAdminDeliveryResume: return "/v1/admin/delivery:resume";
    case Route::Kind::kAdminWritesPause: return "/v1/admin/writes:pause";
    case Route::Kind::kAdminWritesResume: return "/v1/admin/writes:resume";
    case Route::Kind::kNone: return "other";
  }
  return "other";
}

const char* AllowedMethods(Route::Kind kind) {
  switch (kind) {
    case Route::Kind::kHealth:
    case Route::Kind::kMetrics:
    case Route::Kind::kWhoami:
    case Route::Kind::kStats:
    case Route::Kind::kStatsSeries:
    case Route::Kind::kCluster:
    case Route::Kind::kOpenApi: return "GET";
    case Route::Kind::kTimers: return "GET, POST";
    case Route::Kind::kBatch:
    case Route::Kind::kTimerRetry:
    case Route::Kind::kRetryFailed:
    case Route::Kind::kDeleteFailed: return "POST";
    case Route::Kind::kTimer: return "GET, PATCH, DELETE";
    case Route::Kind::kSchedules: return "GET, POST";
    case Route::Kind::kSchedule: return "GET, PATCH, DELETE";
    case Route::Kind::kSchedulePause:
    case Route::Kind::kScheduleResume:
    case Route::Kind::kScheduleTrigger:
    case Route::Kind::kScheduleBackfill: return "POST";
    case Route::Kind::kFlows: return "GET";
    case Route::Kind::kFlow: return "GET, PUT, DELETE";
    case Route::Kind::kFlowPause:
    case Route::Kind::kFlowResume: return "POST";
    case Route::Kind::kAdminExport: return "GET";
    case Route::Kind::kAdminBackup:
    case Route::Kind::kAdminImport:
    case Route::Kind::kAdminDeliveryPause:
    case Route::Kind::kAdminDeliveryResume:
    case Route::Kind::kAdminWritesPause:
    case Route::Kind::kAdminWritesResume: return "POST";
    case Route::Kind::kNone: return "";
  }
  return "";
}

bool AdminOnly(Route::Kind kind) {
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

bool MethodAllowed(Route::Kind kind, std::string_view method) {
  return Lists(AllowedMethods(kind), method);
}

Status CheckPathId(const Route& route) {
  switch (route.kind) {
    case Route::Kind::kTimer:
    case Route::Kind::kTimerRetry:
      if (route.malformed_id) return MalformedIdEscape();
      return ValidateTimerPathId(route.id);
    case Route::Kind::kSchedule:
    case Route::Kind::kSchedulePause:
    case Route::Kind::kScheduleResume:
    case Route::Kind::kScheduleTrigger:
    case Route::Kind::kScheduleBackfill:
      if (route.malformed_id) return MalformedIdEscape();
      return ValidateId(route.id, "id");
    case Route::Kind::kFlow:
    case Route::Kind::kFlowPause:
    case Route::Kind::kFlowResume:
      if (route.malformed_id) {
        return Status::Invalid("invalid_flow", "key has a malformed %-escape", "key");
      }
      return CheckFlowKey(route.id, "key");
    default:
      return Status::Ok();
  }
}

}  // namespace tickwheel::server
