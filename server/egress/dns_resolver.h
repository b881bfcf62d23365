// SPDX-License-Identifier: Apache-2.0
// DnsResolver: host names to addresses for the webhook client and the
// create-time SSRF check, on threads of its own and with a cache, so that
// one slow name server delays only the attempts to that name (asio's
// resolver runs every lookup of an io_context on one hidden thread, one
// after another).
#ifndef TICKWHEEL_SERVER_EGRESS_DNS_RESOLVER_H_
#define TICKWHEEL_SERVER_EGRESS_DNS_RESOLVER_H_

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "tickwheel/internal/mutex.h"

namespace tickwheel::server {

struct DnsResolverOptions {
  unsigned threads = 4;  // lookups at once
  // Of them, at most this many look up names for create-time checks, so
  // that deliveries always have threads of their own (0: threads / 2, at
  // least 1).
  unsigned check_threads = 0;
  std::size_t max_queued = 1024;         // lookups waiting, per lane; more are refused
  std::chrono::seconds ttl{30};          // how long an answer is reused
  std::chrono::seconds failure_ttl{2};   // ... and a failure
  // How long past its ttl an answer may still be used (Stale) when the
  // name server does not answer a new lookup: one that stops answering
  // does not stop deliveries to the names it answered before.
  std::chrono::seconds stale_for{std::chrono::minutes(10)};
  // How long a delivery waits for a new answer before it uses the stale
  // one (when there is one).
  std::chrono::milliseconds stale_grace{500};
  std::size_t max_entries = 10'000;      // names remembered, at most
  // How a name is looked up: getaddrinfo when empty (tests replace it).
  std::function<Result<std::vector<boost::asio::ip::tcp::endpoint>>(const std::string& host,
                                                                   const std::string& port)>
      lookup;
};

// Lookups wait in two lanes: deliveries' and create-time checks'. Threads
// take deliveries' first, and at most `check_threads` of them are in
// checks' at once, so a batch of creates naming a zone whose name server
// never answers cannot hold every thread while deliveries wait. Each lane
// holds at most `max_queued` lookups (more are answered kUnavailable at
// once), and the cache at most `max_entries` names (the oldest answers
// make room; names being looked up are never dropped).
//
// Thread safety: every method from any thread; `done` runs on a resolver
// thread, or on the caller's when the answer is cached or refused, exactly
// once. Concurrent lookups of the same name share one getaddrinfo. IP
// literals are not looked up. Stop (or the destructor) answers what waits
// with kUnavailable.
class DnsResolver {
 public:
  using Endpoints = std::vector<boost::asio::ip::tcp::endpoint>;
  using Callback = std::function<void(const Result<Endpoints>&)>;
  enum class Lane { kDelivery, kCheck };

  explicit DnsResolver(DnsResolverOptions options = {});
  ~DnsResolver();

  void Resolve(const std::string& host, const std::string& port, Callback done,
               Lane lane = Lane::kDelivery);
  // The answer without waiting: an IP literal's address, or a cached answer
  // that has not expired; nullopt if a lookup is needed (Resolve does it).
  std::optional<Result<Endpoints>> Cached(const std::string& host, const std::string& port);
  // The last good answer for the name, expired less than
  // options.stale_for ago; nullopt if none. For a caller whose lookup
  // (Resolve) has not been answered within options.stale_grace.
  std::optional<Endpoints> Stale(const std::string& host, const std::string& port);
  // A caller gave up waiting for a lookup (counted for /metrics).
  void RecordTimeout() { timeouts_.fetch_add(1, std::memory_order_relaxed); }
  void Stop();

  std::uint64_t timeouts() const { return timeouts_.load(std::memory_order_relaxed); }
  std::uint64_t refused() const { return refused_.load(std::memory_order_relaxed); }
  std::uint64_t stale_answers() const { return stale_.load(std::memory_order_relaxed); }
  std::size_t cached_names() const;

 private:
  using SteadyTime = std::chrono::steady_clock::time_point;
  struct Entry {
    bool resolving = false;
    SteadyTime expires;           // fresh until
    SteadyTime usable_until;      // stale answers until (ok answers only)
    Result<Endpoints> answer{Endpoints{}};
    std::vector<Callback> waiters;
  };
  struct Name {
    std::string host, port;
  };

  void Loop();
  // Makes room for one more entry; false if every entry is being looked up.
  bool MakeRoom(SteadyTime now) TW_REQUIRES(mutex_);
  // Queues a lookup of `key` (its entry exists, marked resolving); false
  // if the lane is full (the entry is then not resolving).
  bool Queue(const std::string& host, const std::string& port, Lane lane) TW_REQUIRES(mutex_);
  static Result<Endpoints> Lookup(const std::string& host, const std::string& port);

  const DnsResolverOptions options_;
  const unsigned check_threads_;
  mutable internal::Mutex mutex_;
  internal::CondVar cv_;
  std::unordered_map<std::string, Entry> entries_ TW_GUARDED_BY(mutex_);  // "host:port"
  std::deque<Name> deliveries_ TW_GUARDED_BY(mutex_);
  std::deque<Name> checks_ TW_GUARDED_BY(mutex_);
  unsigned checking_ TW_GUARDED_BY(mutex_) = 0;  // threads in a check's lookup
  bool stopping_ TW_GUARDED_BY(mutex_) = false;
  std::atomic<std::uint64_t> timeouts_{0};
  std::atomic<std::uint64_t> refused_{0};
  std::atomic<std::uint64_t> stale_{0};
  std::vector<std::thread> threads_;
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_EGRESS_DNS_RESOLVER_H_
