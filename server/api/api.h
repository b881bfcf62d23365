// Api: the HTTP interface of `tickwheel serve` (docs/server.md): routes each
// request to its handler.
#ifndef TICKWHEEL_SERVER_API_API_H_
#define TICKWHEEL_SERVER_API_API_H_

#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <functional>
#include <string>
#include <string_view>

#include "api/http_response.h"
#include "api/timer_handlers.h"
#include "common/metrics.h"

namespace tickwheel::server {

// The routes, and what a path names.
struct Route {
  enum class Kind { kNone, kHealth, kMetrics, kTimers, kBatch, kTimer, kTimerRetry };
  Kind kind = Kind::kNone;
  std::string id;  // kTimer, kTimerRetry
};
Route MatchRoute(std::string_view path);

// Thread safety: Handle may run on any number of threads at once.
class Api {
 public:
  // Appends live gauges to /metrics.
  using Gauges = std::function<void(std::string&)>;
  // More of /healthz's answer: JSON members (",\"leases_held\":true"), or "".
  using HealthDetail = std::function<std::string()>;

  Api(TimerHandlers& timers, Metrics& metrics, Gauges gauges, HealthDetail health = {});

  boost::asio::awaitable<HttpResponse> Handle(HttpRequest& req);

  // /healthz answers 503 once draining.
  void SetDraining() { draining_.store(true); }

 private:
  TimerHandlers& timers_;
  Metrics& metrics_;
  const Gauges gauges_;
  const HealthDetail health_;
  std::atomic<bool> draining_{false};
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_API_API_H_
