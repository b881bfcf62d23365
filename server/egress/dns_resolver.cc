// SPDX-License-Identifier: Apache-2.0
#include "egress/dns_resolver.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>

namespace tickwheel::server {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

DnsResolver::DnsResolver(DnsResolverOptions options) : options_(options) {
  for (unsigned i = 0; i < std::max(1u, options_.threads); ++i) {
    threads_.emplace_back([this] { Loop(); });
  }
}

DnsResolver::~DnsResolver() { Stop(); }

void DnsResolver::Resolve(const std::string& host, const std::string& port, Callback done) {
  boost::system::error_code ec;
  const asio::ip::address literal = asio::ip::make_address(host, ec);
  if (!ec) {
    unsigned short n = static_cast<unsigned short>(std::stoi(port));
    done(Endpoints{tcp::endpoint(literal, n)});
    return;
  }
  const std::string key = host + ":" + port;
  const auto now = std::chrono::steady_clock::now();
  std::optional<Result<Endpoints>> cached;
  {
    internal::MutexLock lock(mutex_);
    if (stopping_) {
      cached = Status::Unavailable("the server is shutting down");
    } else {
      if (entries_.size() >= options_.max_entries && !entries_.count(key)) {
        std::erase_if(entries_, [&](const auto& kv) {
          return !kv.second.resolving && kv.second.expires <= now;
        });
      }
      Entry& e = entries_[key];
      if (e.resolving) {
        e.waiters.push_back(std::move(done));
        return;
      }
      if (e.expires > now) {
        cached = e.answer;
      } else {
        e.resolving = true;
        e.waiters.push_back(std::move(done));
        queue_.emplace_back(host, port);
        cv_.Signal();
        return;
      }
    }
  }
  done(*cached);
}

std::optional<Result<DnsResolver::Endpoints>> DnsResolver::Cached(const std::string& host,
                                                                 const std::string& port) {
  boost::system::error_code ec;
  const asio::ip::address literal = asio::ip::make_address(host, ec);
  if (!ec) {
    return Result<Endpoints>(
        Endpoints{tcp::endpoint(literal, static_cast<unsigned short>(std::stoi(port)))});
  }
  const auto now = std::chrono::steady_clock::now();
  internal::MutexLock lock(mutex_);
  auto it = entries_.find(host + ":" + port);
  if (it == entries_.end() || it->second.resolving || it->second.expires <= now) {
    return std::nullopt;
  }
  return it->second.answer;
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
    std::pair<std::string, std::string> name;
    {
      internal::MutexLock lock(mutex_);
      while (!stopping_ && queue_.empty()) cv_.Wait(mutex_);
      if (stopping_) return;
      name = std::move(queue_.front());
      queue_.pop_front();
    }
    Result<Endpoints> answer = options_.lookup ? options_.lookup(name.first, name.second)
                                               : Lookup(name.first, name.second);
    std::vector<Callback> waiters;
    {
      internal::MutexLock lock(mutex_);
      Entry& e = entries_[name.first + ":" + name.second];
      e.resolving = false;
      e.answer = answer;
      e.expires = std::chrono::steady_clock::now() +
                  (answer.ok() ? options_.ttl : options_.failure_ttl);
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
    queue_.clear();
  }
  cv_.SignalAll();
  for (auto& t : threads_) t.join();
  for (Callback& w : waiters) w(Status::Unavailable("the server is shutting down"));
}

}  // namespace tickwheel::server
