// SPDX-License-Identifier: Apache-2.0
#include "egress/dns_resolver.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>

namespace tickwheel::server {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

std::optional<DnsResolver::Endpoints> Literal(const std::string& host, const std::string& port) {
  boost::system::error_code ec;
  const asio::ip::address literal = asio::ip::make_address(host, ec);
  if (ec) return std::nullopt;
  return DnsResolver::Endpoints{tcp::endpoint(literal, static_cast<unsigned short>(std::stoi(port)))};
}

}  // namespace

DnsResolver::DnsResolver(DnsResolverOptions options)
    : options_(options),
      check_threads_(options.check_threads > 0
                         ? std::min(options.check_threads, std::max(1u, options.threads))
                         : std::max(1u, options.threads / 2)) {
  for (unsigned i = 0; i < std::max(1u, options_.threads); ++i) {
    threads_.emplace_back([this] { Loop(); });
  }
}

DnsResolver::~DnsResolver() { Stop(); }

bool DnsResolver::MakeRoom(SteadyTime now) {
  if (entries_.size() < options_.max_entries) return true;
  std::erase_if(entries_, [&](const auto& kv) {
    return !kv.second.resolving && kv.second.expires <= now && kv.second.usable_until <= now;
  });
  if (entries_.size() < options_.max_entries) return true;
  // Still full of answers in use: the one that expires first goes.
  auto oldest = entries_.end();
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (!it->second.resolving && (oldest == entries_.end() || it->second.expires < oldest->second.expires)) {
      oldest = it;
    }
  }
  if (oldest == entries_.end()) return false;
  entries_.erase(oldest);
  return true;
}

bool DnsResolver::Queue(const std::string& host, const std::string& port, Lane lane) {
  std::deque<Name>& queue = lane == Lane::kDelivery ? deliveries_ : checks_;
  if (queue.size() >= options_.max_queued) return false;
  queue.push_back({host, port});
  entries_[host + ":" + port].resolving = true;
  cv_.SignalAll();
  return true;
}

void DnsResolver::Resolve(const std::string& host, const std::string& port, Callback done,
                          Lane lane) {
  if (std::optional<Endpoints> literal = Literal(host, port)) {
    done(*literal);
    return;
  }
  const std::string key = host + ":" + port;
  const auto now = std::chrono::steady_clock::now();
  Result<Endpoints> answer = Endpoints{};
  {
    internal::MutexLock lock(mutex_);
    auto it = entries_.find(key);
    if (stopping_) {
      answer = Status::Unavailable("the server is shutting down");
    } else if (it != entries_.end() && it->second.resolving) {
      it->second.waiters.push_back(std::move(done));
      return;
    } else if (it != entries_.end() && it->second.expires > now) {
      answer = it->second.answer;
    } else if (it == entries_.end() && !MakeRoom(now)) {
      refused_.fetch_add(1, std::memory_order_relaxed);
      answer = Status::Unavailable("cannot resolve " + host + ": " +
                                   std::to_string(options_.max_entries) +
                                   " names are being looked up, the resolver's limit");
    } else if (!Queue(host, port, lane)) {
      refused_.fetch_add(1, std::memory_order_relaxed);
      if (it == entries_.end()) entries_.erase(key);  // made above: nothing in it
      answer = Status::Unavailable("cannot resolve " + host + ": " +
                                   std::to_string(options_.max_queued) +
                                   " lookups are waiting, the resolver's limit");
    } else {
      entries_[key].waiters.push_back(std::move(done));
      return;
    }
  }
  done(answer);
}

std::optional<Result<DnsResolver::Endpoints>> DnsResolver::Cached(const std::string& host,
                                                                 const std::string& port) {
  if (std::optional<Endpoints> literal = Literal(host, port)) return Result<Endpoints>(*literal);
  const auto now = std::chrono::steady_clock::now();
  internal::MutexLock lock(mutex_);
  auto it = entries_.find(host + ":" + port);
  if (it == entries_.end() || it->second.resolving || it->second.expires <= now) return std::nullopt;
  return it->second.answer;
}

std::optional<DnsResolver::Endpoints> DnsResolver::Stale(const std::string& host,
                                                        const std::string& port) {
  const auto now = std::chrono::steady_clock::now();
  internal::MutexLock lock(mutex_);
  auto it = entries_.find(host + ":" + port);
  if (it == entries_.end() || !it->second.answer.ok() || it->second.usable_until <= now) {
    return std::nullopt;
  }
  stale_.fetch_add(1, std::memory_order_relaxed);
  return *it->second.answer;
}

std::size_t DnsResolver::cached_names() const {
  internal::MutexLock lock(mutex_);
  return entries_.size();
}

Result<DnsResolver::Endpoints> DnsResolver::Lookup(const std::string& host,
                                                   const std::string& port) {
  asio::io_context ioc;
  tcp::resolver resolver(ioc);
  boost::system::error_code ec;
  auto results = resolver.resolve(host, port, ec);
  if (ec) return Status::Unavailable("cannot resolve " + host + ": " + ec.message());
  Endpoints out;
  for (const auto& r : results) out.push_back(r.endpoint());
  if (out.empty()) return Status::Unavailable("cannot resolve " + host + ": no address");
  return out;
}

void DnsResolver::Loop() {
  for (;;) {
    Name name;
    bool check = false;
    {
      internal::MutexLock lock(mutex_);
      // Deliveries first; checks only while fewer than check_threads_
      // threads are in one.
      while (!stopping_ && deliveries_.empty() &&
             (checks_.empty() || checking_ >= check_threads_)) {
        cv_.Wait(mutex_);
      }
      if (stopping_) return;
      check = deliveries_.empty();
      std::deque<Name>& queue = check ? checks_ : deliveries_;
      name = std::move(queue.front());
      queue.pop_front();
      if (check) ++checking_;
    }
    Result<Endpoints> answer =
        options_.lookup ? options_.lookup(name.host, name.port) : Lookup(name.host, name.port);
    std::vector<Callback> waiters;
    {
      internal::MutexLock lock(mutex_);
      if (check) {
        --checking_;
        cv_.SignalAll();  // a check may start now
      }
      Entry& e = entries_[name.host + ":" + name.port];
      e.resolving = false;
      const auto now = std::chrono::steady_clock::now();
      if (answer.ok() || !e.answer.ok() || e.usable_until <= now) {
        e.answer = answer;
        e.usable_until = answer.ok() ? now + options_.ttl + options_.stale_for : now;
      }
      // A failed refresh keeps the last good answer usable (until its
      // usable_until) but is fresh for failure_ttl only.
      e.expires = now + (answer.ok() ? options_.ttl : options_.failure_ttl);
      waiters.swap(e.waiters);
    }
    for (Callback& w : waiters) w(answer);
  }
}

void DnsResolver::Stop() {
  std::vector<Callback> waiters;
  {
    internal::MutexLock lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
    for (auto& [key, e] : entries_) {
      for (Callback& w : e.waiters) waiters.push_back(std::move(w));
      e.waiters.clear();
    }
    deliveries_.clear();
    checks_.clear();
  }
  cv_.SignalAll();
  for (auto& t : threads_) t.join();
  for (Callback& w : waiters) w(Status::Unavailable("the server is shutting down"));
}

}  // namespace tickwheel::server
