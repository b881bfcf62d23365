// SPDX-License-Identifier: Apache-2.0
#include "api/schedule_handlers.h"

#include <memory>

#include "api/json_body.h"
#include "api/schedule_json.h"
#include "api/schedule_request.h"
#include "api/timer_json.h"
#include "api/trace_headers.h"
#include "schedule/planner.h"
#include "schedule/schedule_service.h"

namespace tickwheel::server {

namespace asio = boost::asio;

namespace {

// The handler's coroutine only resumes on its executor when the write is
// done (StoreWrite posts it), so the HTTP thread may write it itself.
constexpr WriteOptions kDurable{.sync = true, .may_run_on_caller = true};

void Count(Metrics& metrics, const PlanTotals& totals) {
  metrics.occurrences_planned.fetch_add(totals.planned, std::memory_order_relaxed);
  metrics.occurrences_skipped_dst.fetch_add(totals.skipped_dst, std::memory_order_relaxed);
}

}  // namespace

ScheduleHandlers::ScheduleHandlers(StoreCalls& calls, ServerClock& clock, Metrics& metrics,
                                   ApiLimits limits, TargetCheck targets)
    : calls_(calls),
      store_(calls.store()),
      clock_(clock),
      metrics_(metrics),
      limits_(limits),
      targets_(targets) {}

HttpResponse ScheduleHandlers::Answer(int status, const ScheduleRecord& record) {
  return JsonResponse(status, ScheduleJson(record, false));
}

asio::awaitable<HttpResponse> ScheduleHandlers::Create(const HttpRequest& req) {
  const std::int64_t now_ms = clock_.WallMs();
  Result<boost::json::value> body = ParseJsonBody(req.body());
  if (!body.ok()) co_return ErrorResponse(body.status());
  TimerSpec delivery;
  Result<ScheduleRecord> asked = ParseScheduleCreate(*body, limits_, now_ms, delivery);
  if (!asked.ok()) co_return ErrorResponse(asked.status());
  Result<TraceContext> trace = RequestTrace(req);
  if (!trace.ok()) co_return ErrorResponse(trace.status());
  asked->trace = std::move(*trace);
  std::vector<const TimerSpec*> to_check{&delivery};
  Status allowed = co_await CheckTargets(targets_, to_check, false);
  if (!allowed.ok()) co_return ErrorResponse(allowed);
  auto schedule = std::make_shared<ScheduleRecord>(std::move(*asked));
  auto out = std::make_shared<CreateOutcome>();
  auto write = StoreWrite(
      calls_, {ScheduleKey(schedule->id)},
      [schedule, out, now_ms](StoreTxn& txn) { return CreateSchedule(txn, *schedule, now_ms, *out); },
      kDurable);
  Status s = co_await std::move(write);  // its own statement (GCC 12)
  if (!s.ok()) co_return ErrorResponse(s);
  Count(metrics_, out->totals);
  co_return Answer(out->status, out->record);
}

asio::awaitable<HttpResponse> ScheduleHandlers::Get(const std::string& id,
                                                    std::string_view query,
                                                    bool may_see_secrets) {
  Result<ScheduleGetQuery> q = ParseScheduleGetQuery(query);
  if (!q.ok()) co_return ErrorResponse(q.status());
  // The schedule and its last occurrences, in one call on the read pool.
  struct Read {
    std::optional<ScheduleRecord> schedule;
    std::vector<TimerRecord> last;
  };
  auto read = StoreRead(calls_, [&store = store_, id]() -> Result<Read> {
    Result<std::optional<ScheduleRecord>> r = ReadSchedule(store, id);
    if (!r.ok()) return r.status();
    if (!*r) return Read{};
    Result<std::vector<TimerRecord>> last = LastOccurrences(store, id, kLastOccurrences);
    if (!last.ok()) return last.status();
    return Read{std::move(*r), std::move(*last)};
  });
  Result<Read> r = co_await std::move(read);  // its own statement (GCC 12)
  if (!r.ok()) co_return ErrorResponse(r.status());
  if (!r->schedule) {
    co_return ErrorResponse(Status::NotFound("no schedule with id \"" + id + "\"", "id"));
  }
  ScheduleDetails details;
  Result<Timeline> timeline = Timeline::Of(*r->schedule);
  if (timeline.ok()) {
    details.timeline = &*timeline;
    details.upcoming = UpcomingTimes(*r->schedule, *timeline, clock_.WallMs(), q->next);
  }
  details.last = std::move(r->last);
  co_return JsonResponse(200,
                         ScheduleJson(*r->schedule, q->show_headers && may_see_secrets, &details));
}

asio::awaitable<HttpResponse> ScheduleHandlers::List(std::string_view query,
                                                     bool may_see_secrets) {
  Result<ScheduleListQuery> q = ParseScheduleListQuery(query);
  if (!q.ok()) co_return ErrorResponse(q.status());
  std::optional<std::uint8_t> state;
  if (q->state) state = static_cast<std::uint8_t>(*q->state);
  auto read = StoreRead(calls_, [&store = store_, state, q = *q] {
    return store.ListSchedules(state, q.after, q.limit, kPageBytes, q.prefix);
  });
  Result<SchedulePage> page = co_await std::move(read);  // its own statement (GCC 12)
  if (!page.ok()) co_return ErrorResponse(page.status());
  std::vector<ScheduleRecord> schedules;
  schedules.reserve(page->rows.size());
  for (ScheduleRow& row : page->rows) {
    Result<ScheduleRecord> r = DecodeSchedule(row);
    if (!r.ok()) co_return ErrorResponse(r.status());
    schedules.push_back(std::move(*r));
    std::string().swap(row.record);  // decoded: the page holds its bytes once
    std::string().swap(row.plan);
  }
  co_return JsonResponse(200, SchedulePageJson(schedules, page->next,
                                               q->show_headers && may_see_secrets));
}

asio::awaitable<HttpResponse> ScheduleHandlers::Patch(const HttpRequest& req,
                                                      const std::string& id) {
  const std::int64_t now_ms = clock_.WallMs();
  Result<boost::json::value> body = ParseJsonBody(req.body());
  if (!body.ok()) co_return ErrorResponse(body.status());
  std::optional<TimerSpec> delivery;
  Result<SchedulePatch> patch = ParseSchedulePatch(*body, limits_, now_ms, delivery);
  if (!patch.ok()) co_return ErrorResponse(patch.status());
  if (delivery) {
    std::vector<const TimerSpec*> to_check{&*delivery};
    Status allowed = co_await CheckTargets(targets_, to_check, false);
    if (!allowed.ok()) co_return ErrorResponse(allowed);
  }
  auto changes = std::make_shared<SchedulePatch>(std::move(*patch));
  auto out = std::make_shared<ChangeOutcome>();
  auto write = StoreWrite(
      calls_, {ScheduleKey(id)},
      [id, changes, out, now_ms](StoreTxn& txn) {
        return PatchSchedule(txn, id, *changes, now_ms, *out);
      },
      kDurable);
  Status s = co_await std::move(write);  // its own statement (GCC 12)
  if (!s.ok()) co_return ErrorResponse(s);
  Count(metrics_, out->totals);
  co_return Answer(200, out->record);
}

asio::awaitable<HttpResponse> ScheduleHandlers::Change(const std::string& id, Op op) {
  const std::int64_t now_ms = clock_.WallMs();
  auto out = std::make_shared<ChangeOutcome>();
  auto write = StoreWrite(
      calls_, {ScheduleKey(id)},
      [id, op, out, now_ms](StoreTxn& txn) {
        switch (op) {
          case Op::kPause: return PauseSchedule(txn, id, now_ms, *out);
          case Op::kResume: return ResumeSchedule(txn, id, now_ms, *out);
          case Op::kDelete: break;
        }
        return DeleteSchedule(txn, id, now_ms, *out);
      },
      kDurable);
  Status s = co_await std::move(write);  // its own statement (GCC 12)
  if (!s.ok()) co_return ErrorResponse(s);
  Count(metrics_, out->totals);
  co_return Answer(200, out->record);
}

asio::awaitable<HttpResponse> ScheduleHandlers::Delete(const std::string& id) {
  HttpResponse res = co_await Change(id, Op::kDelete);  // its own statement (GCC 12)
  co_return res;
}

asio::awaitable<HttpResponse> ScheduleHandlers::Pause(const std::string& id) {
  HttpResponse res = co_await Change(id, Op::kPause);
  co_return res;
}

asio::awaitable<HttpResponse> ScheduleHandlers::Resume(const std::string& id) {
  HttpResponse res = co_await Change(id, Op::kResume);
  co_return res;
}

asio::awaitable<HttpResponse> ScheduleHandlers::Trigger(const std::string& id) {
  const std::int64_t now_ms = clock_.WallMs();
  auto out = std::make_shared<TriggerOutcome>();
  auto write = StoreWrite(
      calls_, {ScheduleKey(id)},
      [id, out, now_ms](StoreTxn& txn) { return TriggerSchedule(txn, id, now_ms, *out); },
      kDurable);
  Status s = co_await std::move(write);  // its own statement (GCC 12)
  if (!s.ok()) co_return ErrorResponse(s);
  co_return JsonResponse(out->created ? 201 : 200, TimerJson(out->occurrence));
}

asio::awaitable<HttpResponse> ScheduleHandlers::Backfill(const HttpRequest& req,
                                                         const std::string& id) {
  const std::int64_t now_ms = clock_.WallMs();
  Result<boost::json::value> body = ParseJsonBody(req.body());
  if (!body.ok()) co_return ErrorResponse(body.status());
  Result<BackfillRange> range = ParseBackfill(*body, now_ms);
  if (!range.ok()) co_return ErrorResponse(range.status());
  auto out = std::make_shared<BackfillOutcome>();
  auto write = StoreWrite(
      calls_, {ScheduleKey(id)},
      [id, from = range->from_ms, to = range->to_ms, out, now_ms](StoreTxn& txn) {
        return BackfillSchedule(txn, id, from, to, now_ms, *out);
      },
      kDurable);
  Status s = co_await std::move(write);  // its own statement (GCC 12)
  if (!s.ok()) co_return ErrorResponse(s);
  co_return JsonResponse(200, BackfillJson(*out));
}

}  // namespace tickwheel::server
