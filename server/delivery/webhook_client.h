// SPDX-License-Identifier: Apache-2.0
// WebhookClient: HTTP and HTTPS POSTs to many hosts over pooled keep-alive
// connections, with a per-host connection limit and a timeout per attempt;
// every attempt's addresses checked by the SSRF guard; requests signed.
#ifndef TICKWHEEL_SERVER_DELIVERY_WEBHOOK_CLIENT_H_
#define TICKWHEEL_SERVER_DELIVERY_WEBHOOK_CLIENT_H_

#include <atomic>
#include <boost/asio/ssl/context.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "delivery/attempt_result.h"
#include "delivery/connection_budget.h"
#include "delivery/webhook_signer.h"
#include "egress/dns_resolver.h"
#include "egress/target_policy.h"
#include "timer/http_url.h"

namespace tickwheel::server {

struct WebhookClientOptions {
  std::size_t max_connections_per_host = 64;  // over all threads
  // Over all hosts and threads: more attempts than this at once wait for
  // a connection to be closed (idle ones are closed for them) instead of
  // failing or taking every file descriptor.
  std::size_t max_connections = 4096;
  unsigned threads = 2;  // each with its own connections (shards)
  // One attempt: name lookup, connect, send and answer, together.
  std::chrono::milliseconds timeout{std::chrono::seconds(10)};
  // A connection with nothing to send for this long is closed, and a host
  // with no connection and nothing queued is forgotten.
  std::chrono::milliseconds idle_timeout{std::chrono::seconds(30)};
  DnsResolverOptions dns;
  // For https:// targets (delivery/tls_client.h); null: they fail.
  std::shared_ptr<boost::asio::ssl::context> tls;
  // Where requests may go, checked on the addresses the host resolves to
  // at every attempt; null: anywhere.
  std::shared_ptr<const TargetPolicy> policy;
  // Signs every request that has a message_id; null: none is signed.
  std::shared_ptr<const WebhookSigner> signer;
  // Unix seconds, for webhook-timestamp; the system clock when empty.
  std::function<std::int64_t()> unix_seconds;
};

struct WebhookRequest {
  HttpUrl url;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  // webhook-id (MessageIdOf the timer) when the client signs; empty: not
  // signed.
  std::string message_id;
};

// The client is `threads` shards, each a thread with its own connections.
// A host's limit is split over the shards (a limit of 1 is one connection,
// on one shard), and its requests go, in turn, to the shards that have a
// share. In a shard each host (scheme, name and port) has a queue and up
// to its share of connections, each one request at a time. Before a
// kept-alive connection is reused it is checked for having been closed by
// the receiver; a request is sent once per attempt and never re-sent on its
// own: once any of it is written, a failure is the attempt's
// (AttemptResult::unanswered).
//
// Over all hosts, at most options.max_connections connections are open at
// once (delivery/connection_budget.h): an attempt that needs a new
// connection when they all are waits in line for one (its timeout starts
// once it has one), and idle connections are closed to make room, so a
// burst of timers to many distinct receivers is delivered, in turn, rather
// than failed for want of file descriptors.
//
// Every attempt looks its host up (the resolver's cache makes that cheap)
// and checks the addresses against the policy: a name that now resolves to
// a denied address fails the attempt, even with a connection open, and a
// connection to an address the name no longer has is closed. If the lookup
// fails, an open connection is used (its address was checked when it was
// made). https:// connections verify the receiver's certificate
// (delivery/tls_client.h) and keep the TLS session for resuming the next
// connection to that host.
//
// Thread safety: Post from any thread. Callbacks run on one of the client's
// threads, so they must be quick; they may call Post.
class WebhookClient {
 public:
  using Callback = std::function<void(AttemptResult)>;

  explicit WebhookClient(WebhookClientOptions options);
  ~WebhookClient();

  void Post(WebhookRequest request, Callback done);

  // Hosts with a queue or a connection, over all shards (for tests).
  // REQUIRES: before Stop.
  std::size_t hosts() const;
  // Connections open now, from any thread (never waits).
  std::size_t connections() const { return open_.load(std::memory_order_relaxed); }
  // Attempts that waited for a connection slot, since the start.
  std::uint64_t waited_for_connection() const { return budget_.waited(); }

  // Since the start, from any thread: connections made, TLS handshakes
  // completed, and how many of those resumed a session.
  std::uint64_t connects() const { return connects_.load(std::memory_order_relaxed); }
  std::uint64_t tls_handshakes() const { return handshakes_.load(std::memory_order_relaxed); }
  std::uint64_t tls_resumed() const { return resumed_.load(std::memory_order_relaxed); }

  // The client's resolver (the API checks targets at create with it, and
  // so shares its cache).
  DnsResolver& resolver() { return resolver_; }

  // Gives up: queued requests and those in progress end kAborted, then the
  // threads stop. Idempotent.
  void Stop();

 public:
  struct Shard;  // a thread with its connections (defined in the .cc)

 private:
  const WebhookClientOptions options_;
  DnsResolver resolver_;
  ConnectionBudget budget_;
  std::atomic<std::size_t> open_{0};  // connections open
  std::atomic<std::uint64_t> connects_{0};
  std::atomic<std::uint64_t> handshakes_{0};
  std::atomic<std::uint64_t> resumed_{0};
  std::vector<std::unique_ptr<Shard>> shards_;
  std::atomic<std::size_t> next_{0};
  std::atomic<std::size_t> next_reclaim_{0};
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_DELIVERY_WEBHOOK_CLIENT_H_
