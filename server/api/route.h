// SPDX-License-Identifier: Apache-2.0
// The routes of the HTTP API (docs/server.md): which route a request's path
// names and the id in it, the methods it takes, the check of that id, and
// its template (the metrics' `route` label). No coroutines and no state:
// Api::Admit and Api::Handle route every request with these, and the
// http_request fuzz target (tests/fuzz/) runs the same code.
#ifndef TICKWHEEL_SERVER_API_ROUTE_H_
#define TICKWHEEL_SERVER_API_ROUTE_H_

#include <string>
#include <string_view>

#include "common/status.h"

namespace tickwheel::server {

// The routes, and what a path names.
struct Route {
  enum class Kind {
    kNone, kHealth, kMetrics, kWhoami, kTimers, kBatch, kTimer, kTimerRetry,
    kRetryFailed, kDeleteFailed, kStats, kStatsSeries, kCluster,
    kSchedules, kSchedule, kSchedulePause, kScheduleResume, kScheduleTrigger, kScheduleBackfill,
    kFlows, kFlow, kFlowPause, kFlowResume,
    kOpenApi,  // the API's description, docs/openapi.json: GET, no token
    kAdminBackup, kAdminExport, kAdminImport, kAdminDeliveryPause, kAdminDeliveryResume,
    kAdminWritesPause, kAdminWritesResume,
  };
  Kind kind = Kind::kNone;
  // kTimer, kTimerRetry, kSchedule and its actions: the path's id; kFlow
  // and its actions: the flow key. Percent-decoded (a client may encode any
  // character; "a%40b" is "a@b").
  std::string id;
  bool malformed_id = false;  // a %-escape that is not one: 400 naming the id (key)
};
// The route of `path` (without the query). An action suffix (":retry",
// ":pause", ...) is matched before the id is decoded, so an encoded colon
// ("%3A") belongs to the id.
Route MatchRoute(std::string_view path);
// "GET, POST", ...: the methods `kind` takes ("" for kNone), as an Allow
// header lists them. Every route and method is described in
// docs/openapi.json (openapi_routes_test holds the two together).
const char* AllowedMethods(Route::Kind kind);
// Whether AllowedMethods(kind) lists `method` ("GET"; exact, case-sensitive
// as HTTP methods are): otherwise Admit answers 405.
bool MethodAllowed(Route::Kind kind, std::string_view method);
// The id (or flow key) the route names, checked as its handler would: a
// timer's (a client's id or an occurrence's "<schedule>@<time>"), a
// schedule's, a flow's; a malformed %-escape is refused naming the id
// (key). Ok for routes without one. What Admit answers 400 by.
Status CheckPathId(const Route& route);
// Whether the route is an operator's (/v1/admin/...): it needs an admin
// token whatever its method (an export holds target header values), and
// it is served while clients' writes are paused.
bool AdminOnly(Route::Kind kind);
// The route's template, the `route` label of tickwheel_http_requests_total
// ("/v1/timers/{id}"; "other" for no route): never a raw path, so the
// label's values are bounded. A new route kind gets its template here.
std::string_view RouteTemplate(Route::Kind kind);

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_API_ROUTE_H_
