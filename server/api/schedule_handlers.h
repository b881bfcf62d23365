// SPDX-License-Identifier: Apache-2.0
// The handlers of /v1/schedules (docs/schedules.md): each parses its
// request and runs one schedule operation (schedule/schedule_service.h) in
// one store write, and answers once it is durable.
#ifndef TICKWHEEL_SERVER_API_SCHEDULE_HANDLERS_H_
#define TICKWHEEL_SERVER_API_SCHEDULE_HANDLERS_H_

#include <boost/asio/awaitable.hpp>
#include <string>
#include <string_view>

#include "api/http_response.h"
#include "api/store_calls.h"
#include "api/target_check.h"
#include "api/timer_request.h"
#include "common/metrics.h"
#include "common/server_clock.h"
#include "schedule/schedule_record.h"
#include "store/timer_store.h"

namespace tickwheel::server {

// Every store call goes through StoreCalls (api/store_calls.h): reads on
// its bounded pool, writes counted against max_writes, both with its
// deadline (503 when full or late).
//
// Thread safety: every handler may run on any number of threads at once;
// the store serializes the writes to one schedule.
class ScheduleHandlers {
 public:
  // `calls` must outlive this.
  ScheduleHandlers(StoreCalls& calls, ServerClock& clock, Metrics& metrics, ApiLimits limits,
                   TargetCheck targets = {});

  // POST /v1/schedules: 201 new, 200 the same body again, 409 another.
  boost::asio::awaitable<HttpResponse> Create(const HttpRequest& req);
  // GET /v1/schedules/{id}?next=N: with its next fire times and last
  // occurrences. `may_see_secrets`: an admin token; header values and the
  // target URL's query are shown only to it, when it asks
  // (show_headers=true).
  boost::asio::awaitable<HttpResponse> Get(const std::string& id, std::string_view query,
                                           bool may_see_secrets);
  // GET /v1/schedules?state=&prefix=&limit=&after=
  boost::asio::awaitable<HttpResponse> List(std::string_view query, bool may_see_secrets);
  boost::asio::awaitable<HttpResponse> Patch(const HttpRequest& req, const std::string& id);
  boost::asio::awaitable<HttpResponse> Delete(const std::string& id);
  boost::asio::awaitable<HttpResponse> Pause(const std::string& id);
  boost::asio::awaitable<HttpResponse> Resume(const std::string& id);
  // 201 with the new occurrence (a timer), 200 if one exists at that ms.
  boost::asio::awaitable<HttpResponse> Trigger(const std::string& id);
  boost::asio::awaitable<HttpResponse> Backfill(const HttpRequest& req, const std::string& id);

  // Occurrences a GET lists.
  static constexpr std::size_t kLastOccurrences = 10;
  // A page of GET /v1/schedules holds records up to about this many bytes
  // (as GET /v1/timers's: TimerHandlers::kPageBytes).
  static constexpr std::size_t kPageBytes = 4 << 20;

 private:
  enum class Op { kPause, kResume, kDelete };
  boost::asio::awaitable<HttpResponse> Change(const std::string& id, Op op);
  // Answers the schedule `id` as GET does (after a change).
  HttpResponse Answer(int status, const ScheduleRecord& record);

  StoreCalls& calls_;
  TimerStore& store_;  // only inside StoreRead's calls
  ServerClock& clock_;
  Metrics& metrics_;
  const ApiLimits limits_;
  const TargetCheck targets_;
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_API_SCHEDULE_HANDLERS_H_
