// SPDX-License-Identifier: Apache-2.0
#include "api/dead_letter_handlers.h"

#include <boost/json.hpp>
#include <memory>

#include "api/json_body.h"
#include "api/list_query.h"
#include "api/timer_request.h"
#include "timer/timer_state_machine.h"

namespace tickwheel::server {

namespace asio = boost::asio;
namespace json = boost::json;

Result<BulkRequest> ParseBulkRequest(const json::value& body, std::int64_t now_ms) {
  if (!body.is_object()) {
    return Status::Invalid("invalid_type",
                           "the body must be a JSON object: {\"prefix\"?, \"host\"?, "
                           "\"all\"?, \"dry_run\"?, \"failed_before_ms\"?}");
  }
  BulkRequest out;
  // Up to and including the request's millisecond: a timer that failed in
  // it (GET already says "failed") is included.
  out.failed_before_ms = now_ms + 1;
  for (const auto& [key, value] : body.as_object()) {
    const std::string name(key);
    if (name == "prefix" || name == "host") {
      if (!value.is_string()) return Status::Invalid("invalid_type", name + " must be a string", name);
      const std::string_view text = value.as_string();
      if (name == "prefix") {
        if (Status s = ValidateIdPrefix(text, "prefix"); !s.ok()) return s;
        out.filter.id_prefix = std::string(text);
      } else {
        Result<std::string> host = NormalizeHost(text, "host");
        if (!host.ok()) return host.status();
        out.filter.host = std::move(*host);
      }
    } else if (name == "all") {
      if (!value.is_bool()) return Status::Invalid("invalid_type", "all must be true or false", name);
      out.all = value.as_bool();
    } else if (name == "dry_run") {
      if (!value.is_bool()) return Status::Invalid("invalid_type", "dry_run must be true or false", name);
      out.dry_run = value.as_bool();
    } else if (name == "failed_before_ms") {
      if (!value.is_int64()) {
        return Status::Invalid("invalid_type", "failed_before_ms must be an integer (Unix ms)", name);
      }
      out.failed_before_ms = value.as_int64();
    } else {
      return Status::Invalid("unknown_field",
                             "unknown field \"" + name.substr(0, 64) +
                                 "\"" + SuggestField(name, {"prefix", "host", "all", "dry_run",
                                                            "failed_before_ms"}) +
                                 "; known: prefix, host, all, dry_run, failed_before_ms",
                             name.substr(0, 64));
    }
  }
  return out;
}

DeadLetterHandlers::DeadLetterHandlers(StoreCalls& calls, ServerClock& clock)
    : calls_(calls), clock_(clock) {}

asio::awaitable<HttpResponse> DeadLetterHandlers::RetryFailed(const HttpRequest& req) {
  return Run(req, Action::kRetry);
}

asio::awaitable<HttpResponse> DeadLetterHandlers::DeleteFailed(const HttpRequest& req) {
  return Run(req, Action::kDelete);
}

asio::awaitable<HttpResponse> DeadLetterHandlers::Run(const HttpRequest& req, Action action) {
  Result<json::value> body =
      req.body().empty() ? Result<json::value>(json::object()) : ParseJsonBody(req.body());
  if (!body.ok()) co_return ErrorResponse(body.status());
  Result<BulkRequest> asked = ParseBulkRequest(*body, clock_.WallMs());
  if (!asked.ok()) co_return ErrorResponse(asked.status());
  const BulkRequest request = *asked;
  // An empty body once deleted every dead letter: deleting needs a filter,
  // or "all": true to say that every one is meant.
  if (action == Action::kDelete && !request.all && request.filter.id_prefix.empty() &&
      request.filter.host.empty()) {
    co_return ErrorResponse(Status::Invalid(
        "missing_field",
        "say which dead letters to delete: \"prefix\", \"host\", or \"all\": true for every "
        "one",
        "all"));
  }
  std::size_t matched = 0;
  std::size_t done = 0;
  bool more = false;
  std::optional<ListCursor> cursor;
  for (;;) {
    auto read = StoreRead(calls_, [&store = calls_.store(), cursor, request] {
      return store.List(TimerState::kFailed, cursor, request.dry_run ? 1000 : kChunk, kPageBytes,
                        request.filter);
    });
    Result<ListPage> page = co_await std::move(read);  // its own statement (GCC 12)
    if (!page.ok()) co_return ErrorResponse(page.status());
    // The failed index is in order of failure: past the bound, nothing more.
    bool past = page->next && page->next->time_ms >= request.failed_before_ms;
    std::vector<std::string> ids;
    for (const TimerRecord& r : page->records) {
      if (r.updated_ms >= request.failed_before_ms) {
        past = true;
        break;
      }
      ids.push_back(r.id);
    }
    const std::size_t room = (request.dry_run ? kDryRunCap : kMaxPerCall) - matched;
    if (ids.size() > room) {
      ids.resize(room);
      more = true;
    }
    matched += ids.size();
    if (!request.dry_run && !ids.empty()) {
      auto changed = std::make_shared<std::size_t>(0);
      const std::int64_t now_ms = clock_.WallMs();
      auto write = StoreWrite(
          calls_, ids,
          [ids, request, action, now_ms, changed](StoreTxn& txn) -> Status {
            *changed = 0;  // the store may run a mutation more than once
            for (const std::string& id : ids) {
              Result<std::optional<TimerRecord>> r = txn.Get(id);
              if (!r.ok()) continue;  // unreadable: left alone
              // Re-checked under the timer's lock: it may have changed.
              if (!*r || (*r)->state != TimerState::kFailed ||
                  (*r)->updated_ms >= request.failed_before_ms || !request.filter.Matches(**r)) {
                continue;
              }
              if (action == Action::kDelete) {
                txn.Erase(**r);
              } else {
                Result<TimerRecord> next = Retry(**r, now_ms);
                if (!next.ok()) continue;
                txn.Put(*r, *next);
              }
              ++*changed;
            }
            return Status::Ok();
          },
          WriteOptions{.sync = true});
      Status s = co_await std::move(write);  // its own statement (GCC 12)
      if (!s.ok()) co_return ErrorResponse(s);
      done += *changed;
    }
    if (more || past || !page->next) break;
    cursor = page->next;
  }
  json::object answer{{"matched", matched},
                      {"done", done},
                      {"more", more},
                      {"failed_before_ms", request.failed_before_ms},
                      {"dry_run", request.dry_run}};
  co_return JsonResponse(200, json::serialize(answer));
}

}  // namespace tickwheel::server
