// SPDX-License-Identifier: Apache-2.0
// DnsResolver: host names to addresses for the webhook client, on threads of
// its own and with a cache, so that one slow name server delays only the
// attempts to that name (asio's resolver runs every lookup of an io_context
// on one hidden thread, one after another).
#ifndef TICKWHEEL_SERVER_EGRESS_DNS_RESOLVER_H_
#define TICKWHEEL_SERVER_EGRESS_DNS_RESOLVER_H_

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
  std::chrono::seconds ttl{30};          // how long an answer is reused
  std::chrono::seconds failure_ttl{2};   // ... and a failure
  std::size_t max_entries = 10'000;      // names remembered
  // How a name is looked up: getaddrinfo when empty (tests replace it).
  std::function<Result<std::vector<boost::asio::ip::tcp::endpoint>>(const std::string& host,
                                                                   const std::string& port)>
      lookup;
};

// Thread safety: Resolve from any thread; `done` runs on a resolver thread,
// or on the caller's when the answer is cached, exactly once. Concurrent
// lookups of the same name share one getaddrinfo. IP literals are not
// looked up. Stop (or the destructor) answers what waits with kUnavailable.
class DnsResolver {
 public:
  using Endpoints = std::vector<boost::asio::ip::tcp::endpoint>;
  using Callback = std::function<void(const Result<Endpoints>&)>;

  explicit DnsResolver(DnsResolverOptions options = {});
  ~DnsResolver();

  void Resolve(const std::string& host, const std::string& port, Callback done);
  // The answer without waiting: an IP literal's address, or a cached answer
  // that has not expired; nullopt if a lookup is needed (Resolve does it).
  std::optional<Result<Endpoints>> Cached(const std::string& host, const std::string& port);
  void Stop();

 private:
  struct Entry {
    bool resolving = false;
    std::chrono::steady_clock::time_point expires;
    Result<Endpoints> answer{Endpoints{}};
    std::vector<Callback> waiters;
  };

  void Loop();
  static Result<Endpoints> Lookup(const std::string& host, const std::string& port);

  const DnsResolverOptions options_;
  internal::Mutex mutex_;
  internal::CondVar cv_;
  std::unordered_map<std::string, Entry> entries_ TW_GUARDED_BY(mutex_);  // "host:port"
  std::deque<std::pair<std::string, std::string>> queue_ TW_GUARDED_BY(mutex_);
  bool stopping_ TW_GUARDED_BY(mutex_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_EGRESS_DNS_RESOLVER_H_
