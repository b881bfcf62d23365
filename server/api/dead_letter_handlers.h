// SPDX-License-Identifier: Apache-2.0
// The bulk operations on dead letters (the console's "retry all" and
// "delete all"): POST /v1/timers:retry-failed and /v1/timers:delete-failed.
#ifndef TICKWHEEL_SERVER_API_DEAD_LETTER_HANDLERS_H_
#define TICKWHEEL_SERVER_API_DEAD_LETTER_HANDLERS_H_

#include <boost/asio/awaitable.hpp>
#include <boost/json/value.hpp>
#include <cstdint>

#include "api/http_response.h"
#include "common/server_clock.h"
#include "api/store_calls.h"
#include "store/timer_store.h"

namespace tickwheel::server {

// What a bulk operation applies to: dead letters matching `filter` that
// failed before `failed_before_ms` (so that a timer retried by this very
// operation, failing again later, is not picked up again; one that failed
// again within the request's first millisecond may be, which only retries
// it once more).
struct BulkRequest {
  ListFilter filter;
  bool dry_run = false;
  bool all = false;  // "all": true, asked for every failed timer
  std::int64_t failed_before_ms = 0;
};

// The body {"prefix"?, "host"?, "all"?, "dry_run"?, "failed_before_ms"?}
// (failed_before_ms: `now_ms` + 1, every timer failed up to the request's
// millisecond). kInvalidArgument naming the field that is wrong, or an
// unknown one. Whether a filter or "all" is required is the caller's
// (delete requires one).
Result<BulkRequest> ParseBulkRequest(const boost::json::value& body, std::int64_t now_ms);

// Each handler walks the dead letters (the failed state index, oldest
// failure first) with the listing's scan budget per page, and changes them
// in store writes of at most kChunk timers, durable before the answer. In
// each write every timer is read again under its lock and changed only if
// it is still a dead letter matching the request, as the single-timer
// routes do; so a timer retried or deleted meanwhile by someone else is
// not counted twice. One call changes at most kMaxPerCall timers and then
// answers "more": true: call again with the answer's failed_before_ms
// until "more" is false. A dry run changes nothing and counts up to
// kDryRunCap matches ("more": true past it).
//
// Answer: {"matched", "done", "more", "failed_before_ms", "dry_run"}.
//
// Thread safety: any number of calls at once; the store serializes the
// writes to one timer.
class DeadLetterHandlers {
 public:
  static constexpr std::size_t kChunk = 500;
  static constexpr std::size_t kMaxPerCall = 10'000;
  static constexpr std::size_t kDryRunCap = 100'000;

  // A page of the walk holds records up to about this many bytes.
  static constexpr std::size_t kPageBytes = 1 << 20;

  DeadLetterHandlers(StoreCalls& calls, ServerClock& clock);

  boost::asio::awaitable<HttpResponse> RetryFailed(const HttpRequest& req);
  boost::asio::awaitable<HttpResponse> DeleteFailed(const HttpRequest& req);

 private:
  enum class Action { kRetry, kDelete };
  boost::asio::awaitable<HttpResponse> Run(const HttpRequest& req, Action action);

  StoreCalls& calls_;
  ServerClock& clock_;
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_API_DEAD_LETTER_HANDLERS_H_
