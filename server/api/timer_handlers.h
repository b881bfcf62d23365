// SPDX-License-Identifier: Apache-2.0
// The handlers of /v1/timers: each parses its request, runs its transition
// (timer/timer_state_machine.h) in one store write, and answers after the
// write is durable. They reach the store through api/store_calls.h only.
#ifndef TICKWHEEL_SERVER_API_TIMER_HANDLERS_H_
#define TICKWHEEL_SERVER_API_TIMER_HANDLERS_H_

#include <boost/asio/awaitable.hpp>
#include <string>
#include <string_view>

#include "api/http_response.h"
#include "api/target_check.h"
#include "api/timer_request.h"
#include "common/metrics.h"
#include "common/server_clock.h"
#include "api/store_calls.h"
#include "store/timer_store.h"

namespace tickwheel::server {

// Thread safety: every handler may run on any number of threads at once;
// the store serializes the writes to one timer.
class TimerHandlers {
 public:
  // `targets`: the SSRF guard at create (none by default).
  TimerHandlers(StoreCalls& calls, ServerClock& clock, Metrics& metrics, ApiLimits limits,
                TargetCheck targets = {});

  boost::asio::awaitable<HttpResponse> Create(const HttpRequest& req);
  boost::asio::awaitable<HttpResponse> CreateBatch(const HttpRequest& req);
  // `query`: ?show_headers=true shows target header values and the
  // target URL's query, if `may_see_secrets` (an admin token); "***"
  // otherwise.
  boost::asio::awaitable<HttpResponse> Get(const std::string& id, std::string_view query = {},
                                           bool may_see_secrets = false);
  boost::asio::awaitable<HttpResponse> Reschedule(const HttpRequest& req, const std::string& id);
  boost::asio::awaitable<HttpResponse> Cancel(const std::string& id);
  boost::asio::awaitable<HttpResponse> Retry(const std::string& id);
  boost::asio::awaitable<HttpResponse> List(std::string_view query, bool may_see_secrets = false);

  // A page of a listing holds records up to about this many bytes.
  static constexpr std::size_t kPageBytes = 4 << 20;

 private:
  StoreCalls& calls_;
  TimerStore& store_;
  ServerClock& clock_;
  Metrics& metrics_;
  const ApiLimits limits_;
  const TargetCheck targets_;
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_API_TIMER_HANDLERS_H_
