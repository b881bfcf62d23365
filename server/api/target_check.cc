// SPDX-License-Identifier: Apache-2.0
#include "api/target_check.h"

#include <boost/asio.hpp>
#include <map>
#include <memory>
#include <optional>

#include "timer/http_url.h"
#include "timer/target.h"

namespace tickwheel::server {

namespace asio = boost::asio;

namespace {

struct Lookup {
  std::string host, port;
};

// Looks every host of `lookups` up at once (the resolver's check lane) and
// checks its addresses; resumes the awaiting coroutine on its own executor
// with a verdict per host, after `patience` at most: a host whose lookup
// has not answered by then (or failed) is Ok (the attempt checks it). A
// plain function, not a coroutine (GCC 12, see api/store_calls.h).
auto LookUpAndCheck(const TargetCheck& check, std::vector<Lookup> lookups) {
  return asio::async_initiate<decltype(asio::use_awaitable), void(std::vector<Status>)>(
      [&check, lookups = std::move(lookups)](auto handler) mutable {
        using Handler = decltype(handler);
        struct State {
          explicit State(asio::any_io_executor ex) : executor(ex), timer(ex) {}
          asio::any_io_executor executor;
          asio::steady_timer timer;
          std::optional<Handler> handler;  // taken when all answered, or at the deadline
          std::vector<Status> verdicts;
          std::vector<char> answered;
          std::size_t remaining = 0;
        };
        auto state = std::make_shared<State>(asio::get_associated_executor(handler));
        state->handler.emplace(std::move(handler));
        state->verdicts.assign(lookups.size(), Status::Ok());
        state->answered.assign(lookups.size(), 0);
        state->remaining = lookups.size();
        DnsResolver* resolver = check.resolver;
        // Everything below runs on the coroutine's executor (a strand).
        auto finish = [state, resolver] {
          if (!state->handler) return;
          for (char a : state->answered) {
            if (!a) resolver->RecordTimeout();
          }
          Handler h = std::move(*state->handler);
          state->handler.reset();
          state->timer.cancel();
          std::move(h)(std::move(state->verdicts));
        };
        state->timer.expires_after(check.patience);
        state->timer.async_wait([finish](const boost::system::error_code& ec) mutable {
          if (!ec) finish();  // not all answered in time: the attempts check those
        });
        const TargetPolicy* policy = check.policy;
        for (std::size_t i = 0; i < lookups.size(); ++i) {
          const std::string host = lookups[i].host;
          resolver->Resolve(
              host, lookups[i].port,
              [state, finish, policy, host, i](const Result<DnsResolver::Endpoints>& r) {
                Status verdict = r.ok() ? policy->Check(host, *r) : Status::Ok();
                asio::post(state->executor, [state, finish, verdict, i]() mutable {
                  if (!state->handler) return;
                  state->verdicts[i] = std::move(verdict);
                  state->answered[i] = 1;
                  if (--state->remaining == 0) finish();
                });
              },
              DnsResolver::Lane::kCheck);
        }
      },
      asio::use_awaitable);
}

}  // namespace

asio::awaitable<Status> CheckTargets(const TargetCheck& check,
                                     const std::vector<const TimerSpec*>& specs, bool batch) {
  if (check.policy == nullptr) co_return Status::Ok();
  // host:port -> the index of the first spec with it.
  std::map<std::pair<std::string, std::string>, std::size_t> hosts;
  std::string_view previous;  // a batch's timers mostly share their target
  for (std::size_t i = 0; i < specs.size(); ++i) {
    if (i > 0 && specs[i]->target == previous) continue;
    previous = specs[i]->target;
    if (IsNatsTarget(specs[i]->target)) continue;
    Result<HttpUrl> url = ParseHttpUrl(specs[i]->target);
    if (!url.ok()) continue;  // parsed before; cannot happen
    hosts.emplace(std::make_pair(url->host, url->port), i);
  }
  // The first denied spec (by index) is the one the answer names.
  std::size_t denied_index = specs.size();
  Status denied;
  auto deny = [&](std::size_t index, Status verdict) {
    if (!verdict.ok() && index < denied_index) {
      denied_index = index;
      denied = std::move(verdict);
    }
  };
  std::vector<Lookup> lookups;
  std::vector<std::size_t> lookup_index;
  for (const auto& [host_port, index] : hosts) {
    const std::string& host = host_port.first;
    Status verdict = check.policy->CheckName(host);
    if (!verdict.ok()) {
      deny(index, std::move(verdict));
      continue;
    }
    std::optional<Result<DnsResolver::Endpoints>> known;
    boost::system::error_code ec;
    const asio::ip::address literal = asio::ip::make_address(host, ec);
    if (!ec) {
      known = DnsResolver::Endpoints{asio::ip::tcp::endpoint(literal, 0)};
    } else if (check.resolver) {
      known = check.resolver->Cached(host, host_port.second);
    }
    if (known) {
      if (known->ok()) deny(index, check.policy->Check(host, **known));
    } else if (check.resolver) {
      lookups.push_back({host, host_port.second});
      lookup_index.push_back(index);
    }
  }
  if (!lookups.empty()) {
    auto lookup = LookUpAndCheck(check, std::move(lookups));
    std::vector<Status> verdicts = co_await std::move(lookup);  // its own statement (GCC 12)
    for (std::size_t i = 0; i < verdicts.size(); ++i) deny(lookup_index[i], std::move(verdicts[i]));
  }
  if (denied_index < specs.size()) {
    const std::string field =
        (batch ? "timers[" + std::to_string(denied_index) + "]." : std::string()) + "target.url";
    co_return Status::Invalid("target_denied",
                              field + ": " + denied.message() +
                                  " (the SSRF guard: --target-allow, --target-deny)",
                              field);
  }
  co_return Status::Ok();
}

}  // namespace tickwheel::server
