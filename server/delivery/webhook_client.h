// WebhookClient: HTTP POSTs to many hosts over pooled keep-alive
// connections, with a per-host connection limit and a timeout per attempt.
#ifndef TICKWHEEL_SERVER_DELIVERY_WEBHOOK_CLIENT_H_
#define TICKWHEEL_SERVER_DELIVERY_WEBHOOK_CLIENT_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "delivery/attempt_result.h"
#include "delivery/dns_resolver.h"
#include "timer/http_url.h"

namespace tickwheel::server {

struct WebhookClientOptions {
  std::size_t max_connections_per_host = 64;  // over all threads
  unsigned threads = 2;  // each with its own connections (shards)
  // One attempt: name lookup, connect, send and answer, together.
  std::chrono::milliseconds timeout{std::chrono::seconds(10)};
  // A connection with nothing to send for this long is closed, and a host
  // with no connection and nothing queued is forgotten.
  std::chrono::milliseconds idle_timeout{std::chrono::seconds(30)};
  DnsResolverOptions dns;
};

struct WebhookRequest {
  HttpUrl url;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

// The client is `threads` shards, each a thread with its own connections.
// A host's limit is split over the shards (a limit of 1 is one connection,
// on one shard), and its requests go, in turn, to the shards that have a
// share. In a shard each host has a queue and up to its share of
// connections, each one request at a time. Before a kept-alive connection
// is reused it is checked for having been closed by the receiver; a request
// is sent once per attempt and never re-sent on its own: once any of it is
// written, a failure is the attempt's (AttemptResult::unanswered).
//
// Thread safety: Post from any thread. Callbacks run on one of the client's
// threads, so they must be quick; they may call Post.
class WebhookClient {
 public:
  using Callback = std::function<void(AttemptResult)>;

  explicit WebhookClient(WebhookClientOptions options);
  ~WebhookClient();

  void Post(WebhookRequest request, Callback done);

  // Hosts with a queue or a connection, and connections open, over all
  // shards (for tests and metrics). REQUIRES: before Stop.
  std::size_t hosts() const;
  std::size_t connections() const;

  // Gives up: queued requests and those in progress end kAborted, then the
  // threads stop. Idempotent.
  void Stop();

 public:
  struct Shard;  // a thread with its connections (defined in the .cc)

 private:
  const WebhookClientOptions options_;
  DnsResolver resolver_;
  std::vector<std::unique_ptr<Shard>> shards_;
  std::atomic<std::size_t> next_{0};
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_DELIVERY_WEBHOOK_CLIENT_H_
