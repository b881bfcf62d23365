// SPDX-License-Identifier: Apache-2.0
// Api: the HTTP interface of `tickwheel serve` (docs/server.md): checks
// each request on its headers (api/request_guard.h: Host, Origin,
// Content-Type; api/auth.h: the token; the route and method) before its
// body is read, then routes it to its handler.
//
// Writing a handler (the timer, dead-letter and stats handlers show it):
//   - a route is added to Route::Kind, MatchRoute, AllowedMethods,
//     CheckPathId and RouteTemplate (api/route.h), and to the switch of
//     Api::Handle; by the time its handler runs, the Host and Origin,
//     the token, the method, the path's id and the Content-Type
//     (application/json when there is a body) have been checked, and the
//     body has been read within the limits;
//   - the handler parses and checks the request, then reaches the store
//     ONLY through api/store_calls.h (StoreRead, StoreWrite): never on the
//     HTTP thread, never past the deadline (503);
//   - it holds no state of its own: what it changes is in the store, or in
//     the part of the server it calls (server/schedule/, server/flow/).
#ifndef TICKWHEEL_SERVER_API_API_H_
#define TICKWHEEL_SERVER_API_API_H_

#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "api/admin_handlers.h"
#include "api/auth.h"
#include "api/dead_letter_handlers.h"
#include "api/flow_handlers.h"
#include "api/http_response.h"
#include "api/http_server.h"
#include "api/request_guard.h"
#include "api/route.h"
#include "api/schedule_handlers.h"
#include "api/stats_handlers.h"
#include "api/timer_handlers.h"
#include "common/metrics.h"

namespace tickwheel::server {

struct ApiAccess {
  TokenAuth auth;             // no tokens: every request is anonymous
  bool metrics_auth = false;  // /metrics needs a token too
  RequestGuard guard;         // Host, Origin, Content-Type
};

// Admit checks, in this order, on the headers alone: Host (421), Origin
// (403; an allowed other origin's OPTIONS preflight is answered 204), then
// the static files (the console), then the token: every /v1 path (known or
// not) needs a valid one when there are tokens (401 with WWW-Authenticate
// without one, 403 for a read token that writes), then the route (404) and
// method (405), then the Content-Type of a body (415), then the id or flow
// key the path names (400: a timer's, an occurrence's, a schedule's, a
// flow's, as the handlers would check them). /healthz is always
// open and checked for nothing; /v1/openapi.json (the API's description)
// needs no token but is checked for Host and Origin; /metrics is open
// unless access.metrics_auth. While draining, /healthz answers 503 "draining" and
// so does every /v1 request but GET.
// /v1/admin/ routes need an admin token (even to GET an export: it holds
// target header values). While clients' writes are paused (admin
// writes:pause, for a move), creates, reschedules, cancels, retries, the
// bulk dead-letter actions and schedule and flow changes answer 503
// "writes_paused"; reads and the admin routes are served.
//
// Thread safety: Admit and the handlers it returns may run on any number of
// threads at once.
class Api {
 public:
  // Appends live gauges to /metrics.
  using Gauges = std::function<void(std::string&)>;
  // More of /healthz's answer: JSON members (",\"leases_held\":true"), or "".
  // Must not block (it must not wait on the store).
  using HealthDetail = std::function<std::string()>;
  // Pages answered from their headers (the console's files): an answer, or
  // nullopt for the API's routes.
  using StaticFiles = std::function<std::optional<HttpResponse>(const HttpRequest& head)>;

  // The handlers must outlive this.
  struct Handlers {
    TimerHandlers& timers;
    DeadLetterHandlers& dead_letters;
    StatsHandlers& stats;
    ScheduleHandlers& schedules;
    FlowHandlers& flows;
    AdminHandlers& admin;
  };

  // `writes_paused` (may be null: never paused) must outlive this.
  Api(Handlers handlers, Metrics& metrics, Gauges gauges, HealthDetail health = {},
      ApiAccess access = {}, StaticFiles static_files = {},
      const std::atomic<bool>* writes_paused = nullptr);

  // What HttpServer calls with each request's head. Every answer is
  // counted by route template and status code.
  Admission Admit(const HttpRequest& head);

  // /healthz and writes answer 503 "draining" from now on.
  void SetDraining() { draining_.store(true); }

 private:
  // An answer given at admission (counted as the API's answers are).
  Admission Answer(Route::Kind kind, HttpResponse res);
  boost::asio::awaitable<HttpResponse> Handle(HttpRequest& req, Route route, Role role,
                                              std::optional<std::string> cors_origin);

  TimerHandlers& timers_;
  DeadLetterHandlers& dead_letters_;
  ScheduleHandlers& schedules_;
  StatsHandlers& stats_;
  FlowHandlers& flows_;
  AdminHandlers& admin_;
  Metrics& metrics_;
  const Gauges gauges_;
  const HealthDetail health_;
  const ApiAccess access_;
  const StaticFiles static_files_;
  const std::atomic<bool>* const writes_paused_;
  std::atomic<bool> draining_{false};
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_API_API_H_
