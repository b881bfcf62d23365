// `tickwheel serve`: wires the store, scheduler, delivery and API together
// and runs until SIGTERM/SIGINT.
#ifndef TICKWHEEL_SERVER_SERVE_H_
#define TICKWHEEL_SERVER_SERVE_H_

#include <chrono>
#include <string>

#include "api/http_server.h"
#include "api/timer_request.h"
#include "delivery/webhook_client.h"
#include "scheduler/scheduler.h"

namespace tickwheel::server {

struct ServeOptions {
  std::string listen = "127.0.0.1:8080";
  std::string data_dir = "./data";
  std::string postgres;  // not supported yet: rejected
  std::string nats;      // NATS URL; empty: NATS targets are refused
  unsigned threads = 2;  // HTTP server threads
  ApiLimits limits;
  SchedulerOptions scheduler;
  WebhookClientOptions webhook;
  HttpServerOptions http;
  std::chrono::milliseconds drain_timeout{std::chrono::seconds(30)};
  // Delivered and cancelled timers are deleted this long after they
  // finished; 0 keeps them forever.
  std::chrono::milliseconds retention{std::chrono::hours(24 * 7)};
  std::string log_level = "info";
};

// Runs the server; returns the process exit code (0 after a clean drain,
// 1 if it could not start, with the reason logged).
int RunServe(const ServeOptions& options);

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_SERVE_H_
