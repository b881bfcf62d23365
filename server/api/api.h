// Api: the HTTP/JSON interface of `tickwheel serve` (routes in DESIGN.md,
// "Server"), over the store and the scheduler.
#ifndef TICKWHEEL_SERVER_API_API_H_
#define TICKWHEEL_SERVER_API_API_H_

#include <atomic>
#include <functional>
#include <string>

#include "api/http_server.h"
#include "api/timer_request.h"
#include "metrics.h"
#include "scheduler/scheduler.h"
#include "store/timer_store.h"

namespace tickwheel::server {

// Thread safety: Handle may run on any number of threads at once. Every
// state change goes through the store's writer, which serializes them; a
// change is answered after it is written (creates, reschedules, cancels and
// retries after the WAL is synced).
class Api {
 public:
  using Gauges = std::function<void(std::string&)>;

  Api(TimerStore& store, Scheduler& scheduler, Metrics& metrics,
      ApiLimits limits, Gauges gauges);

  boost::asio::awaitable<HttpResponse> Handle(HttpRequest& req);

  // /healthz answers 503 once draining.
  void SetDraining() { draining_.store(true); }

 private:
  boost::asio::awaitable<HttpResponse> Create(const HttpRequest& req);
  boost::asio::awaitable<HttpResponse> CreateBatch(const HttpRequest& req);
  boost::asio::awaitable<HttpResponse> Reschedule(const HttpRequest& req,
                                                  const std::string& id);
  boost::asio::awaitable<HttpResponse> Cancel(const std::string& id);
  boost::asio::awaitable<HttpResponse> Retry(const std::string& id);
  HttpResponse Get(const std::string& id);
  HttpResponse List(std::string_view query);

  TimerStore& store_;
  Scheduler& scheduler_;
  Metrics& metrics_;
  const ApiLimits limits_;
  const Gauges gauges_;
  std::atomic<bool> draining_{false};
};

// The JSON form of a timer, as GET answers it.
std::string TimerJson(const TimerRecord& record);

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_API_API_H_
