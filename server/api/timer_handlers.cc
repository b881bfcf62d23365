// SPDX-License-Identifier: Apache-2.0
#include "api/timer_handlers.h"

#include <memory>

#include "api/id_generator.h"
#include "api/json_body.h"
#include "api/list_query.h"
#include "api/timer_json.h"
#include "api/trace_headers.h"
#include "schedule/schedule_service.h"
#include "timer/occurrence_id.h"
#include "timer/timer_state_machine.h"

namespace tickwheel::server {

namespace asio = boost::asio;

namespace {

// The handler's coroutine only resumes on its executor when the write is
// done (StoreWrite posts it), so the HTTP thread may write it itself.
constexpr WriteOptions kDurable{.sync = true, .may_run_on_caller = true};

Status IdConflict(const std::string& id, const std::string& field, const char* nothing_stored) {
  return Status::Conflict("id_conflict",
                          (field == "id" ? "" : field + ": ") + "a timer with id \"" + id +
                              "\" already exists with a different body" + nothing_stored,
                          field);
}

// What a change to one existing timer does, decided from its stored record:
// a Status refuses it; nullopt leaves the timer as it is.
using Edit = std::function<Result<std::optional<TimerRecord>>(const TimerRecord&)>;

// The outcome of a change, filled on the store's thread.
struct Change {
  TimerRecord record;  // as stored after the change
  bool changed = false;
};

// Runs `edit` on timer `id` in one durable store write (kNotFound if there
// is none). An occurrence of a schedule that this cancels leaves its
// schedule's plan in the same write (its schedule is named too). A plain
// function, not a coroutine (see StoreWrite).
auto WriteChange(StoreCalls& calls, const std::string& id, std::int64_t now_ms,
                 std::shared_ptr<Change> out, Edit edit) {
  return StoreWrite(
      calls, WithScheduleKeys({id}),
      [out, id, now_ms, edit = std::move(edit)](StoreTxn& txn) -> Status {
        Result<std::optional<TimerRecord>> r = txn.Get(id);
        if (!r.ok()) return r.status();
        if (!*r) return Status::NotFound("no timer with id \"" + id + "\"", "id");
        Result<std::optional<TimerRecord>> next = edit(**r);
        if (!next.ok()) return next.status();
        if (!*next) {
          out->record = std::move(**r);
          out->changed = false;
          return Status::Ok();
        }
        txn.Put(*r, **next);
        if ((*next)->state == TimerState::kCancelled) {
          OccurrencePlanning schedule(txn, now_ms);
          if (Status s = schedule.Finished(**next, (*r)->attempts > 0); !s.ok()) return s;
        }
        out->record = std::move(**next);
        out->changed = true;
        return Status::Ok();
      },
      kDurable);
}

HttpResponse ChangeResponse(const Status& s, const Change& out) {
  if (!s.ok()) return ErrorResponse(s);
  return JsonResponse(200, TimerJson(out.record));
}

}  // namespace

TimerHandlers::TimerHandlers(StoreCalls& calls, ServerClock& clock, Metrics& metrics,
                             ApiLimits limits, TargetCheck targets)
    : calls_(calls), store_(calls.store()), clock_(clock), metrics_(metrics), limits_(limits), targets_(targets) {}

asio::awaitable<HttpResponse> TimerHandlers::Create(const HttpRequest& req) {
  const std::int64_t now_ms = clock_.WallMs();
  Result<boost::json::value> body = ParseJsonBody(req.body());
  if (!body.ok()) co_return ErrorResponse(body.status());
  Result<TimerSpec> spec = ParseTimerSpec(*body, limits_, now_ms);
  if (!spec.ok()) co_return ErrorResponse(spec.status());
  Result<TraceContext> trace = RequestTrace(req);
  if (!trace.ok()) co_return ErrorResponse(trace.status());
  spec->trace = std::move(*trace);
  std::vector<const TimerSpec*> to_check{&*spec};
  Status allowed = co_await CheckTargets(targets_, to_check, false);
  if (!allowed.ok()) co_return ErrorResponse(allowed);
  struct Outcome {
    int status = 0;
    TimerRecord record;
  };
  auto out = std::make_shared<Outcome>();
  out->record = NewTimer(*spec, spec->id ? *spec->id : GenerateIds(1)[0], now_ms);
  auto asked = std::make_shared<TimerSpec>(std::move(*spec));
  auto write = StoreWrite(
      calls_, {out->record.id},
      [out, asked](StoreTxn& txn) -> Status {
        Result<std::optional<TimerRecord>> existing = txn.Get(out->record.id);
        if (!existing.ok()) return existing.status();
        if (*existing) {  // the same create again, or another with that id
          if (!asked->id || !SameCreate(**existing, *asked)) {
            return IdConflict(out->record.id, "id", "");
          }
          out->status = 200;
          out->record = std::move(**existing);
          return Status::Ok();
        }
        txn.Put(std::nullopt, out->record);
        out->status = 201;
        return Status::Ok();
      },
      kDurable);
  Status s = co_await std::move(write);  // its own statement (GCC 12)
  if (!s.ok()) co_return ErrorResponse(s);
  HttpResponse res = JsonResponse(out->status, TimerJson(out->record));
  if (out->status == 201) {
    metrics_.created.fetch_add(1, std::memory_order_relaxed);
    // Ids hold only unreserved characters (ValidateId): no escaping needed.
    res.set(boost::beast::http::field::location, "/v1/timers/" + out->record.id);
  }
  co_return res;
}

asio::awaitable<HttpResponse> TimerHandlers::CreateBatch(const HttpRequest& req) {
  const std::int64_t now_ms = clock_.WallMs();
  Result<boost::json::value> body = ParseJsonBody(req.body());
  if (!body.ok()) co_return ErrorResponse(body.status());
  Result<std::vector<TimerSpec>> specs = ParseBatch(*body, limits_, now_ms);
  if (!specs.ok()) co_return ErrorResponse(specs.status());
  // The request's trace context is every timer's: a batch is one operation
  // of its caller's span (docs/server.md).
  Result<TraceContext> trace = RequestTrace(req);
  if (!trace.ok()) co_return ErrorResponse(trace.status());
  for (TimerSpec& spec : *specs) spec.trace = *trace;
  std::vector<const TimerSpec*> to_check;
  for (const TimerSpec& spec : *specs) to_check.push_back(&spec);
  Status allowed = co_await CheckTargets(targets_, to_check, true);
  if (!allowed.ok()) co_return ErrorResponse(allowed);
  struct Outcome {
    std::vector<TimerSpec> specs;
    std::vector<TimerRecord> records;
    std::vector<char> created;
    std::size_t new_ones = 0;
  };
  auto out = std::make_shared<Outcome>();
  out->specs = std::move(*specs);
  std::size_t missing_ids = 0;
  for (const TimerSpec& spec : out->specs) missing_ids += spec.id ? 0 : 1;
  std::vector<std::string> generated = GenerateIds(missing_ids);
  std::vector<std::string> ids;
  ids.reserve(out->specs.size());
  for (const TimerSpec& spec : out->specs) {
    out->records.push_back(
        NewTimer(spec, spec.id ? *spec.id : std::move(generated[--missing_ids]), now_ms));
    ids.push_back(out->records.back().id);
  }
  auto write = StoreWrite(
      calls_, std::move(ids),
      [out](StoreTxn& txn) -> Status {
        // A mutation may run more than once (the store's retries and its
        // insert-only path): every output is set afresh.
        out->created.assign(out->records.size(), 1);
        out->new_ones = 0;
        for (std::size_t i = 0; i < out->records.size(); ++i) {
          Result<std::optional<TimerRecord>> existing = txn.Get(out->records[i].id);
          if (!existing.ok()) return existing.status();
          if (!*existing) continue;
          const TimerSpec& spec = out->specs[i];
          if (!spec.id || !SameCreate(**existing, spec)) {  // all or nothing
            return IdConflict(out->records[i].id, "timers[" + std::to_string(i) + "].id",
                              "; nothing was stored");
          }
          out->created[i] = 0;
          out->records[i] = std::move(**existing);
        }
        for (std::size_t i = 0; i < out->records.size(); ++i) {
          if (!out->created[i]) continue;
          txn.Put(std::nullopt, out->records[i]);
          ++out->new_ones;
        }
        return Status::Ok();
      },
      kDurable);
  Status s = co_await std::move(write);  // its own statement (GCC 12)
  if (!s.ok()) co_return ErrorResponse(s);
  metrics_.created.fetch_add(out->new_ones, std::memory_order_relaxed);
  co_return JsonResponse(out->new_ones > 0 ? 201 : 200, BatchJson(out->records, out->created));
}

asio::awaitable<HttpResponse> TimerHandlers::Get(const std::string& id, std::string_view query,
                                                 bool may_see_secrets) {
  Result<bool> show = ParseGetQuery(query);
  if (!show.ok()) co_return ErrorResponse(show.status());
  auto read = StoreRead(calls_, [&store = store_, id] { return store.Get(id); });
  Result<std::optional<TimerRecord>> r = co_await std::move(read);  // its own statement (GCC 12)
  if (!r.ok()) co_return ErrorResponse(r.status());
  if (!*r) co_return ErrorResponse(Status::NotFound("no timer with id \"" + id + "\"", "id"));
  co_return JsonResponse(200, TimerJson(**r, *show && may_see_secrets));
}

asio::awaitable<HttpResponse> TimerHandlers::Reschedule(const HttpRequest& req,
                                                        const std::string& id) {
  const std::int64_t now_ms = clock_.WallMs();
  Result<boost::json::value> body = ParseJsonBody(req.body());
  if (!body.ok()) co_return ErrorResponse(body.status());
  Result<std::int64_t> at = ParseReschedule(*body, limits_, now_ms);
  if (!at.ok()) co_return ErrorResponse(at.status());
  if (ParseOccurrenceId(id)) {
    co_return ErrorResponse(Status::Conflict(
        "occurrence",
        "\"" + id + "\" is an occurrence of a schedule, due when its schedule says: PATCH the "
        "schedule, or cancel this occurrence (DELETE)",
        "id"));
  }
  auto out = std::make_shared<Change>();
  auto write = WriteChange(calls_, id, now_ms, out,
                           [fire_at = *at, now_ms](const TimerRecord& r)
                               -> Result<std::optional<TimerRecord>> {
                             Result<TimerRecord> next = tickwheel::server::Reschedule(r, fire_at, now_ms);
                             if (!next.ok()) return next.status();
                             return std::optional<TimerRecord>(std::move(*next));
                           });
  Status s = co_await std::move(write);  // its own statement (GCC 12)
  if (s.ok() && out->changed) metrics_.rescheduled.fetch_add(1, std::memory_order_relaxed);
  co_return ChangeResponse(s, *out);
}

asio::awaitable<HttpResponse> TimerHandlers::Cancel(const std::string& id) {
  const std::int64_t now_ms = clock_.WallMs();
  auto out = std::make_shared<Change>();
  auto write = WriteChange(calls_, id, now_ms, out, [now_ms](const TimerRecord& r) {
    return tickwheel::server::Cancel(r, now_ms);
  });
  Status s = co_await std::move(write);  // its own statement (GCC 12)
  if (s.ok() && out->changed) metrics_.cancelled.fetch_add(1, std::memory_order_relaxed);
  co_return ChangeResponse(s, *out);
}

asio::awaitable<HttpResponse> TimerHandlers::Retry(const std::string& id) {
  const std::int64_t now_ms = clock_.WallMs();
  auto out = std::make_shared<Change>();
  auto write = WriteChange(calls_, id, now_ms, out,
                           [now_ms](const TimerRecord& r) -> Result<std::optional<TimerRecord>> {
                             Result<TimerRecord> next = tickwheel::server::Retry(r, now_ms);
                             if (!next.ok()) return next.status();
                             return std::optional<TimerRecord>(std::move(*next));
                           });
  Status s = co_await std::move(write);  // its own statement (GCC 12)
  co_return ChangeResponse(s, *out);
}

asio::awaitable<HttpResponse> TimerHandlers::List(std::string_view query, bool may_see_secrets) {
  Result<ListQuery> q = ParseListQuery(query);
  if (!q.ok()) co_return ErrorResponse(q.status());
  auto read = StoreRead(calls_, [&store = store_, q = *q] {
    return store.List(q.state, q.after, q.limit, kPageBytes, q.filter);
  });
  Result<ListPage> page = co_await std::move(read);  // its own statement (GCC 12)
  if (!page.ok()) co_return ErrorResponse(page.status());
  co_return JsonResponse(200, PageJson(*page, q->show_headers && may_see_secrets));
}

}  // namespace tickwheel::server
