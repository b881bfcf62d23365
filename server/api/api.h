// SPDX-License-Identifier: Apache-2.0
// Api: the HTTP interface of `tickwheel serve` (docs/server.md): checks
// who is asking (api/auth.h) and routes each request to its handler.
#ifndef TICKWHEEL_SERVER_API_API_H_
#define TICKWHEEL_SERVER_API_API_H_

#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <functional>
#include <string>
#include <string_view>

#include "api/admin_handlers.h"
#include "api/auth.h"
#include "api/dead_letter_handlers.h"
#include "api/http_response.h"
#include "api/stats_handlers.h"
#include "api/timer_handlers.h"
#include "common/metrics.h"

namespace tickwheel::server {

// The routes, and what a path names.
struct Route {
  enum class Kind {
    kNone, kHealth, kMetrics, kWhoami, kTimers, kBatch, kTimer, kTimerRetry,
    kRetryFailed, kDeleteFailed, kStats, kStatsSeries, kCluster,
    kAdminBackup, kAdminExport, kAdminImport, kAdminDeliveryPause, kAdminDeliveryResume,
    kAdminWritesPause, kAdminWritesResume,
  };
  Kind kind = Kind::kNone;
  std::string id;  // kTimer, kTimerRetry
};
Route MatchRoute(std::string_view path);
// The route's template, the `route` label of tickwheel_http_requests_total
// ("/v1/timers/{id}"; "other" for no route): never a raw path, so the
// label's values are bounded. A new route kind gets its template here.
std::string_view RouteTemplate(Route::Kind kind);

struct ApiAccess {
  TokenAuth auth;             // no tokens: every request is anonymous
  bool metrics_auth = false;  // /metrics needs a token too
};

// Every /v1 path (known or not) needs a valid token when there are tokens:
// 401 with WWW-Authenticate without one, 403 for a read token that writes.
// /healthz is always open; /metrics is open unless access.metrics_auth.
// /v1/admin/ routes need an admin token (even to GET an export: it holds
// target header values). While clients' writes are paused (admin
// writes:pause, for a move), creates, reschedules, cancels, retries and the
// bulk dead-letter actions answer 503 "writes_paused"; reads and the admin
// routes are served.
//
// Thread safety: Handle may run on any number of threads at once.
class Api {
 public:
  // Appends live gauges to /metrics.
  using Gauges = std::function<void(std::string&)>;
  // More of /healthz's answer: JSON members (",\"leases_held\":true"), or "".
  using HealthDetail = std::function<std::string()>;

  // The handlers must outlive this.
  struct Handlers {
    TimerHandlers& timers;
    DeadLetterHandlers& dead_letters;
    StatsHandlers& stats;
    AdminHandlers& admin;
  };

  // `writes_paused` (may be null: never paused) must outlive this.
  Api(Handlers handlers, Metrics& metrics, Gauges gauges, HealthDetail health = {},
      ApiAccess access = {}, const std::atomic<bool>* writes_paused = nullptr);

  // Answers `req`, and counts it by route template and status code.
  boost::asio::awaitable<HttpResponse> Handle(HttpRequest& req);

  // /healthz answers 503 once draining.
  void SetDraining() { draining_.store(true); }

 private:
  boost::asio::awaitable<HttpResponse> Answer(HttpRequest& req, const Route& route);

  TimerHandlers& timers_;
  DeadLetterHandlers& dead_letters_;
  StatsHandlers& stats_;
  AdminHandlers& admin_;
  Metrics& metrics_;
  const Gauges gauges_;
  const HealthDetail health_;
  const ApiAccess access_;
  const std::atomic<bool>* const writes_paused_;
  std::atomic<bool> draining_{false};
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_API_API_H_
