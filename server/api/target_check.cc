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

// Looks `host` up and checks its addresses; resumes the awaiting coroutine
// on its own executor with the verdict, after `patience` at most. A plain
// function, not a coroutine (GCC 12, see api/store_write.h).
auto LookUpAndCheck(const TargetCheck& check, std::string host, std::string port) {
  return asio::async_initiate<decltype(asio::use_awaitable), void(Status)>(
      [&check, host = std::move(host), port = std::move(port)](auto handler) mutable {
        using Handler = decltype(handler);
        struct State {
          explicit State(asio::any_io_executor ex) : executor(ex), timer(ex) {}
          asio::any_io_executor executor;
          asio::steady_timer timer;
          std::optional<Handler> handler;  // taken by whichever comes first
        };
        auto state = std::make_shared<State>(asio::get_associated_executor(handler));
        state->handler.emplace(std::move(handler));
        // Both completions run on the coroutine's executor (a strand), one
        // after the other.
        auto finish = [state](Status s) {
          if (!state->handler) return;
          Handler h = std::move(*state->handler);
          state->handler.reset();
          state->timer.cancel();
          std::move(h)(std::move(s));
        };
        state->timer.expires_after(check.patience);
        state->timer.async_wait([finish](const boost::system::error_code& ec) mutable {
          if (!ec) finish(Status::Ok());  // no answer in time: the attempt checks
        });
        const TargetPolicy* policy = check.policy;
        check.resolver->Resolve(
            host, port, [state, finish, policy, host](const Result<DnsResolver::Endpoints>& r) {
              Status verdict = r.ok() ? policy->Check(host, *r) : Status::Ok();
              asio::post(state->executor, [finish, verdict]() mutable { finish(verdict); });
            });
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
  for (const auto& [host_port, index] : hosts) {
    const std::string& host = host_port.first;
    Status verdict = check.policy->CheckName(host);
    if (verdict.ok()) {
      std::optional<Result<DnsResolver::Endpoints>> known;
      boost::system::error_code ec;
      const asio::ip::address literal = asio::ip::make_address(host, ec);
      if (!ec) {
        known = DnsResolver::Endpoints{asio::ip::tcp::endpoint(literal, 0)};
      } else if (check.resolver) {
        known = check.resolver->Cached(host, host_port.second);
      }
      if (known) {
        if (known->ok()) verdict = check.policy->Check(host, **known);
      } else if (check.resolver) {
        auto lookup = LookUpAndCheck(check, host, host_port.second);
        verdict = co_await std::move(lookup);  // its own statement (GCC 12)
      }
    }
    if (!verdict.ok()) {
      const std::string field =
          (batch ? "timers[" + std::to_string(index) + "]." : std::string()) + "target.url";
      co_return Status::Invalid("target_denied",
                                field + ": " + verdict.message() +
                                    " (the SSRF guard: --target-allow, --target-deny)",
                                field);
    }
  }
  co_return Status::Ok();
}

}  // namespace tickwheel::server
