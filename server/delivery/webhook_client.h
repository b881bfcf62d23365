// WebhookClient: HTTP POSTs to many hosts over pooled keep-alive
// connections, with a per-host connection limit and a timeout per attempt.
#ifndef TICKWHEEL_SERVER_DELIVERY_WEBHOOK_CLIENT_H_
#define TICKWHEEL_SERVER_DELIVERY_WEBHOOK_CLIENT_H_

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "delivery/http_url.h"

namespace tickwheel::server {

struct WebhookClientOptions {
  std::size_t max_connections_per_host = 64;
  std::chrono::milliseconds timeout{std::chrono::seconds(10)};
};

struct WebhookResult {
  bool ok = false;     // a 2xx answer
  int status = 0;      // HTTP status, 0 if none was read
  std::string error;   // why not ok
  double latency_ms = 0;
};

// Thread safety: Post from any thread. Callbacks run on the client's own
// thread (one), so they must be quick; they may call Post.
// Each host gets a queue and up to max_connections_per_host connections
// (each one request at a time); a connection that fails is reopened for the
// next request; a request that fails on a reused connection before any
// answer is sent once more on a fresh one.
class WebhookClient {
 public:
  using Callback = std::function<void(WebhookResult)>;

  explicit WebhookClient(WebhookClientOptions options);
  ~WebhookClient();

  void Post(const HttpUrl& url, std::string body, std::string idempotency_key,
            Callback done);

  // Runs `fn` on the client's thread after the work already queued there
  // (for batching what its callbacks produce).
  void Defer(std::function<void()> fn);

  // Finishes nothing more: queued requests get an error, connections close.
  void Stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_DELIVERY_WEBHOOK_CLIENT_H_
