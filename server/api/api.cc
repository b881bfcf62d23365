#include "api/api.h"

#include <boost/json.hpp>
#include <charconv>
#include <random>

#include "wall_clock.h"

namespace tickwheel::server {

namespace asio = boost::asio;
namespace http = boost::beast::http;
namespace json = boost::json;

namespace {

HttpResponse JsonResponse(int status, std::string body) {
  HttpResponse res;
  res.result(static_cast<unsigned>(status));
  res.set(http::field::content_type, "application/json");
  res.body() = std::move(body);
  return res;
}

HttpResponse Error(const ApiError& e) { return JsonResponse(e.http_status, ErrorBody(e)); }

HttpResponse Error(int status, std::string code, std::string message,
                   std::string field = "") {
  return Error(ApiError{status, std::move(code), std::move(message), std::move(field)});
}

std::string GenerateId() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id(32, '0');
  std::uint64_t a = rng(), b = rng();
  for (int i = 0; i < 16; ++i) {
    id[i] = kHex[(a >> (4 * i)) & 15];
    id[16 + i] = kHex[(b >> (4 * i)) & 15];
  }
  return id;
}

TimerRecord NewRecord(const TimerSpec& spec, std::string id, std::int64_t now_ms) {
  TimerRecord r;
  r.id = std::move(id);
  r.state = TimerState::kPending;
  r.fire_at_ms = spec.fire_at_ms;
  r.due_ms = spec.fire_at_ms;
  r.max_attempts = spec.max_attempts;
  r.backoff_ms = spec.backoff_ms;
  r.created_ms = now_ms;
  r.updated_ms = now_ms;
  r.request_hash = spec.request_hash;
  r.url = spec.url;
  r.payload = spec.payload;
  return r;
}

// Runs `mutation` over `ids` on a store writer; after it is written runs
// `committed` there, under the ids' locks (so scheduler updates happen in
// commit order per timer), then
// resumes the awaiting coroutine with the write's status. A plain function,
// not a coroutine: GCC 12 mishandles lambdas passed by value to coroutines.
template <typename Mutation, typename Committed>
auto Write(TimerStore& store, std::vector<std::string> ids, Mutation mutation,
           Committed committed, bool sync) {
  return asio::async_initiate<decltype(asio::use_awaitable), void(Status)>(
      [&store, ids = std::move(ids), mutation = std::move(mutation),
       committed = std::move(committed), sync](auto handler) mutable {
        auto executor = asio::get_associated_executor(handler);
        auto h = std::make_shared<decltype(handler)>(std::move(handler));
        store.Submit(std::move(ids), std::move(mutation),
                     [h, committed, executor](const Status& s) {
                       if (s.ok()) committed();
                       asio::post(executor, [h, s]() mutable { std::move(*h)(s); });
                     },
                     sync);
      },
      asio::use_awaitable);
}

HttpResponse StoreError(const Status& s) {
  return Error(503, "store_unavailable", s.message);
}

std::string_view StateConflictMessage(TimerState s) {
  switch (s) {
    case TimerState::kDelivering: return "the timer is being delivered";
    case TimerState::kDelivered: return "the timer was already delivered";
    case TimerState::kFailed: return "the timer failed (a dead letter; POST :retry re-arms it)";
    case TimerState::kCancelled: return "the timer was cancelled";
    case TimerState::kPending: return "the timer is pending";
  }
  return "";
}

// Outside the coroutines: GCC 12 destroys brace-initialized temporaries
// twice inside a coroutine.
HttpResponse BatchResponse(const std::vector<TimerRecord>& records,
                           const std::vector<char>& created) {
  json::array items;
  items.reserve(records.size());
  bool any_created = false;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const TimerRecord& r = records[i];
    any_created = any_created || created[i];
    json::object item;
    item["id"] = r.id;
    item["state"] = StateName(r.state);
    item["fire_at_ms"] = r.fire_at_ms;
    item["created"] = created[i] != 0;
    items.push_back(std::move(item));
  }
  json::object body;
  body["timers"] = std::move(items);
  return JsonResponse(any_created ? 201 : 200, json::serialize(body));
}

}  // namespace

std::string TimerJson(const TimerRecord& r) {
  // Built by hand: the payload is stored serialized and goes out as is.
  auto quoted = [](std::string_view text) { return json::serialize(json::string_view(text)); };
  std::string out;
  out.reserve(256 + r.payload.size() + r.url.size());
  out += "{\"id\":";
  out += quoted(r.id);
  out += ",\"state\":\"";
  out += StateName(r.state);
  out += "\",\"fire_at_ms\":";
  out += std::to_string(r.fire_at_ms);
  if (IsScheduled(r.state)) {
    out += ",\"next_attempt_ms\":";
    out += std::to_string(r.due_ms);
  }
  out += ",\"attempts\":";
  out += std::to_string(r.attempts);
  out += ",\"retry\":{\"max_attempts\":";
  out += std::to_string(r.max_attempts);
  out += ",\"backoff_ms\":";
  out += std::to_string(r.backoff_ms);
  const bool nats = std::string_view(r.url).substr(0, kNatsPrefix.size()) == kNatsPrefix;
  out += nats ? "},\"target\":{\"nats\":" : "},\"target\":{\"url\":";
  out += quoted(nats ? std::string_view(r.url).substr(kNatsPrefix.size()) : std::string_view(r.url));
  out += "},\"payload\":";
  out += r.payload.empty() ? "null" : r.payload;
  out += ",\"created_ms\":";
  out += std::to_string(r.created_ms);
  out += ",\"updated_ms\":";
  out += std::to_string(r.updated_ms);
  if (!r.last_error.empty()) {
    out += ",\"last_error\":";
    out += quoted(r.last_error);
  }
  out += "}";
  return out;
}

Api::Api(TimerStore& store, Scheduler& scheduler, Metrics& metrics,
         ApiLimits limits, Gauges gauges)
    : store_(store),
      scheduler_(scheduler),
      metrics_(metrics),
      limits_(limits),
      gauges_(std::move(gauges)) {}

asio::awaitable<HttpResponse> Api::Handle(HttpRequest& req) {
  metrics_.http_requests.fetch_add(1, std::memory_order_relaxed);
  const std::string_view target = req.target();
  const std::size_t q = target.find('?');
  const std::string_view path = target.substr(0, q);
  const std::string_view query =
      q == std::string_view::npos ? std::string_view() : target.substr(q + 1);
  const http::verb method = req.method();
  auto method_not_allowed = [&](const char* allow) {
    HttpResponse res = Error(405, "method_not_allowed",
                             std::string(req.method_string()) + " is not allowed on " +
                                 std::string(path) + "; allowed: " + allow);
    res.set(http::field::allow, allow);
    return res;
  };
  HttpResponse res;
  constexpr std::string_view kTimers = "/v1/timers";
  if (path == "/healthz") {
    res = method != http::verb::get ? method_not_allowed("GET")
          : draining_.load()        ? JsonResponse(503, R"({"status":"draining"})")
                                    : JsonResponse(200, R"({"status":"ok"})");
  } else if (path == "/metrics") {
    if (method != http::verb::get) {
      res = method_not_allowed("GET");
    } else {
      res = JsonResponse(200, metrics_.Render(gauges_));
      res.set(http::field::content_type, "text/plain; version=0.0.4");
    }
  } else if (path == kTimers) {
    if (method == http::verb::post) {
      res = co_await Create(req);
    } else if (method == http::verb::get) {
      res = List(query);
    } else {
      res = method_not_allowed("GET, POST");
    }
  } else if (path == "/v1/timers:batch") {
    // (No co_await inside ?: : GCC 12 miscompiles it.)
    if (method == http::verb::post) {
      res = co_await CreateBatch(req);
    } else {
      res = method_not_allowed("POST");
    }
  } else if (path.size() > kTimers.size() + 1 && path.substr(0, kTimers.size() + 1) == "/v1/timers/") {
    std::string_view rest = path.substr(kTimers.size() + 1);
    constexpr std::string_view kRetry = ":retry";
    const bool retry = rest.size() > kRetry.size() &&
                       rest.substr(rest.size() - kRetry.size()) == kRetry;
    if (retry) rest.remove_suffix(kRetry.size());
    const std::string id(rest);
    if (auto e = ValidateId(id, "id")) {
      res = Error(*e);
    } else if (retry) {
      if (method == http::verb::post) {
        res = co_await Retry(id);
      } else {
        res = method_not_allowed("POST");
      }
    } else if (method == http::verb::get) {
      res = Get(id);
    } else if (method == http::verb::patch) {
      res = co_await Reschedule(req, id);
    } else if (method == http::verb::delete_) {
      res = co_await Cancel(id);
    } else {
      res = method_not_allowed("GET, PATCH, DELETE");
    }
  } else {
    res = Error(404, "not_found", "no route " + std::string(path) +
                                      " (the API is under /v1/timers)");
  }
  if (res.result_int() >= 400 && res.result_int() < 500) {
    metrics_.http_client_errors.fetch_add(1, std::memory_order_relaxed);
  }
  co_return res;
}

asio::awaitable<HttpResponse> Api::Create(const HttpRequest& req) {
  const std::int64_t now_ms = WallNowMs();
  auto body = ParseJsonBody(req.body());
  if (auto* e = std::get_if<ApiError>(&body)) co_return Error(*e);
  auto parsed = ParseTimerSpec(std::get<0>(body), limits_, now_ms);
  if (auto* e = std::get_if<ApiError>(&parsed)) co_return Error(*e);
  const TimerSpec& spec = std::get<0>(parsed);
  struct Outcome {
    int status = 0;
    TimerRecord record;
  };
  auto out = std::make_shared<Outcome>();
  auto record = std::make_shared<TimerRecord>(
      NewRecord(spec, spec.id ? *spec.id : GenerateId(), now_ms));
  const bool check_existing = spec.id.has_value();
  auto write = Write(
      store_, {record->id},
      [out, record, check_existing](StoreTxn& txn) {
        if (check_existing) {
          if (auto existing = txn.Get(record->id)) {
            out->status = existing->request_hash == record->request_hash ? 200 : 409;
            out->record = std::move(*existing);
            return;
          }
        }
        txn.Put(std::nullopt, *record);
        out->status = 201;
      },
      [this, out, record] {
        if (out->status != 201) return;
        metrics_.created.fetch_add(1, std::memory_order_relaxed);
        scheduler_.Arm(record->id, record->due_ms);
      },
      /*sync=*/true);
  // Its own statement: no temporary lives across the suspension (GCC 12).
  Status s = co_await std::move(write);
  if (!s.ok()) co_return StoreError(s);
  if (out->status == 409) {
    co_return Error(409, "id_conflict",
                    "a timer with id \"" + record->id +
                        "\" already exists with a different body",
                    "id");
  }
  co_return JsonResponse(out->status,
                         TimerJson(out->status == 201 ? *record : out->record));
}

asio::awaitable<HttpResponse> Api::CreateBatch(const HttpRequest& req) {
  const std::int64_t now_ms = WallNowMs();
  auto body = ParseJsonBody(req.body());
  if (auto* e = std::get_if<ApiError>(&body)) co_return Error(*e);
  auto parsed = ParseBatch(std::get<0>(body), limits_, now_ms);
  if (auto* e = std::get_if<ApiError>(&parsed)) co_return Error(*e);
  auto records = std::make_shared<std::vector<TimerRecord>>();
  for (const TimerSpec& spec : std::get<0>(parsed)) {
    records->push_back(NewRecord(spec, spec.id ? *spec.id : GenerateId(), now_ms));
  }
  struct Outcome {
    std::vector<char> created;
    std::ptrdiff_t conflict = -1;
  };
  auto out = std::make_shared<Outcome>();
  auto specs = std::make_shared<std::vector<TimerSpec>>(std::move(std::get<0>(parsed)));
  std::vector<std::string> ids;
  ids.reserve(records->size());
  for (const TimerRecord& r : *records) ids.push_back(r.id);
  auto write = Write(
      store_, std::move(ids),
      [out, records, specs](StoreTxn& txn) {
        out->created.assign(records->size(), 1);
        for (std::size_t i = 0; i < records->size(); ++i) {
          if (!(*specs)[i].id) continue;
          if (auto existing = txn.Get((*records)[i].id)) {
            if (existing->request_hash != (*records)[i].request_hash) {
              out->conflict = static_cast<std::ptrdiff_t>(i);
              return;  // all or nothing
            }
            out->created[i] = 0;
            (*records)[i] = std::move(*existing);
          }
        }
        for (std::size_t i = 0; i < records->size(); ++i) {
          if (out->created[i]) txn.Put(std::nullopt, (*records)[i]);
        }
      },
      [this, out, records] {
        if (out->conflict >= 0) return;
        for (std::size_t i = 0; i < records->size(); ++i) {
          if (!out->created[i]) continue;
          metrics_.created.fetch_add(1, std::memory_order_relaxed);
          scheduler_.Arm((*records)[i].id, (*records)[i].due_ms);
        }
      },
      /*sync=*/true);
  // Its own statement: no temporary lives across the suspension (GCC 12).
  Status s = co_await std::move(write);
  if (!s.ok()) co_return StoreError(s);
  if (out->conflict >= 0) {
    const std::string field = "timers[" + std::to_string(out->conflict) + "].id";
    co_return Error(409, "id_conflict",
                    field + ": a timer with id \"" + (*records)[out->conflict].id +
                        "\" already exists with a different body; nothing was stored",
                    field);
  }
  co_return BatchResponse(*records, out->created);
}

HttpResponse Api::Get(const std::string& id) {
  std::optional<TimerRecord> r = store_.Get(id);
  if (!r) return Error(404, "not_found", "no timer with id \"" + id + "\"", "id");
  return JsonResponse(200, TimerJson(*r));
}

namespace {
// What a change to one existing timer does, decided from its stored record:
// refuse with `error`, store `next`, or (neither) leave it as it is.
struct TimerEdit {
  std::optional<ApiError> error;
  std::optional<TimerRecord> next;
};

// The outcome of a change, filled on the store writer.
struct Change {
  ApiError error;      // when not found, or the edit refused
  TimerRecord record;  // as stored after the change
  bool found = false;  // and the edit did not refuse
  bool changed = false;
};

ApiError StateConflict(TimerState state, const char* code, const char* what) {
  return {409, code,
          std::string(StateConflictMessage(state)) + "; only " + what, "id"};
}

// Runs `edit` on timer `id` in one store write (404 if there is none) and,
// once a change is committed, `committed(record)` under the id's lock. A
// plain function for the same reason as Write.
template <typename Edit, typename Committed>
auto WriteChange(TimerStore& store, const std::string& id,
                 std::shared_ptr<Change> out, Edit edit, Committed committed) {
  return Write(
      store, {id},
      [out, id, edit = std::move(edit)](StoreTxn& txn) {
        auto r = txn.Get(id);
        if (!r) {
          out->error = {404, "not_found", "no timer with id \"" + id + "\"", "id"};
          return;
        }
        TimerEdit e = edit(*r);
        if (e.error) {
          out->error = std::move(*e.error);
          return;
        }
        out->found = true;
        if (!e.next) {
          out->record = std::move(*r);
          return;
        }
        txn.Put(r, *e.next);
        out->record = std::move(*e.next);
        out->changed = true;
      },
      [out, committed = std::move(committed)] {
        if (out->changed) committed(out->record);
      },
      /*sync=*/true);
}

HttpResponse ChangeResponse(const Status& s, const Change& out) {
  if (!s.ok()) return StoreError(s);
  if (!out.found) return Error(out.error);
  return JsonResponse(200, TimerJson(out.record));
}
}  // namespace

asio::awaitable<HttpResponse> Api::Reschedule(const HttpRequest& req,
                                              const std::string& id) {
  const std::int64_t now_ms = WallNowMs();
  auto body = ParseJsonBody(req.body());
  if (auto* e = std::get_if<ApiError>(&body)) co_return Error(*e);
  auto at = ParseReschedule(std::get<0>(body), limits_, now_ms);
  if (auto* e = std::get_if<ApiError>(&at)) co_return Error(*e);
  const std::int64_t fire_at = std::get<0>(at);
  auto out = std::make_shared<Change>();
  auto write = WriteChange(
      store_, id, out,
      [fire_at, now_ms](const TimerRecord& r) {
        TimerEdit e;
        if (r.state != TimerState::kPending) {
          e.error = StateConflict(r.state, "not_pending",
                               "pending timers can be rescheduled");
          return e;
        }
        e.next = r;
        e.next->fire_at_ms = fire_at;
        e.next->due_ms = fire_at;
        e.next->updated_ms = now_ms;
        return e;
      },
      [this](const TimerRecord& r) {
        metrics_.rescheduled.fetch_add(1, std::memory_order_relaxed);
        scheduler_.Arm(r.id, r.due_ms);
      });
  // Its own statement: no temporary lives across the suspension (GCC 12).
  Status s = co_await std::move(write);
  co_return ChangeResponse(s, *out);
}

asio::awaitable<HttpResponse> Api::Cancel(const std::string& id) {
  const std::int64_t now_ms = WallNowMs();
  auto out = std::make_shared<Change>();
  auto write = WriteChange(
      store_, id, out,
      [now_ms](const TimerRecord& r) {
        TimerEdit e;
        if (r.state == TimerState::kCancelled) return e;  // nothing changes
        if (r.state != TimerState::kPending) {
          e.error = StateConflict(r.state, "not_pending",
                               "pending timers can be cancelled");
          return e;
        }
        e.next = r;
        e.next->state = TimerState::kCancelled;
        e.next->updated_ms = now_ms;
        return e;
      },
      [this](const TimerRecord& r) {
        metrics_.cancelled.fetch_add(1, std::memory_order_relaxed);
        scheduler_.Disarm(r.id);
      });
  // Its own statement: no temporary lives across the suspension (GCC 12).
  Status s = co_await std::move(write);
  co_return ChangeResponse(s, *out);
}

asio::awaitable<HttpResponse> Api::Retry(const std::string& id) {
  const std::int64_t now_ms = WallNowMs();
  auto out = std::make_shared<Change>();
  auto write = WriteChange(
      store_, id, out,
      [now_ms](const TimerRecord& r) {
        TimerEdit e;
        if (r.state != TimerState::kFailed) {
          e.error = StateConflict(r.state, "not_failed",
                               "failed timers (dead letters) can be retried");
          return e;
        }
        e.next = r;
        e.next->state = TimerState::kPending;
        e.next->attempts = 0;
        e.next->due_ms = now_ms;
        e.next->updated_ms = now_ms;
        return e;
      },
      [this](const TimerRecord& r) { scheduler_.Arm(r.id, r.due_ms); });
  // Its own statement: no temporary lives across the suspension (GCC 12).
  Status s = co_await std::move(write);
  co_return ChangeResponse(s, *out);
}

HttpResponse Api::List(std::string_view query) {
  std::optional<TimerState> state;
  std::size_t limit = 100;
  std::string after;
  while (!query.empty()) {
    const std::size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const std::size_t eq = pair.find('=');
    std::string_view key = pair.substr(0, eq);
    std::string_view value = eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1);
    if (key == "state") {
      state = ParseState(value);
      if (!state) {
        return Error(400, "invalid_value",
                     "state must be pending, delivering, delivered, failed or "
                     "cancelled, not \"" + std::string(value) + "\"", "state");
      }
    } else if (key == "limit") {
      std::size_t n = 0;
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec != std::errc() || end != value.data() + value.size() || n < 1 || n > 1000) {
        return Error(400, "invalid_value", "limit must be an integer 1..1000", "limit");
      }
      limit = n;
    } else if (key == "after") {
      if (auto e = ValidateId(value, "after")) return Error(*e);
      after = std::string(value);
    } else {
      return Error(400, "unknown_field",
                   "unknown query parameter \"" + std::string(key) +
                       "\"; known: state, limit, after", std::string(key));
    }
  }
  if (!state) {
    return Error(400, "missing_field",
                 "give ?state=pending|delivering|delivered|failed|cancelled", "state");
  }
  std::string resume_after;
  std::vector<TimerRecord> records = store_.List(*state, after, limit, &resume_after);
  std::string body = "{\"timers\":[";
  for (std::size_t i = 0; i < records.size(); ++i) {
    if (i) body += ',';
    body += TimerJson(records[i]);
  }
  body += "]";
  if (!resume_after.empty()) {
    body += ",\"next_after\":\"" + resume_after + "\"";
  }
  body += "}";
  return JsonResponse(200, std::move(body));
}

}  // namespace tickwheel::server
