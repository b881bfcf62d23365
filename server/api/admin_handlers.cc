// SPDX-License-Identifier: Apache-2.0
#include "api/admin_handlers.h"

#include <boost/json.hpp>
#include <charconv>
#include <memory>
#include <set>
#include <thread>

#include "api/background_call.h"
#include "api/json_body.h"
#include "api/list_query.h"
#include "api/store_calls.h"
#include "api/timer_json.h"
#include "api/transfer_json.h"
#include "transfer/import_write.h"

#ifndef TICKWHEEL_VERSION
#define TICKWHEEL_VERSION "unknown"
#endif

namespace tickwheel::server {

namespace asio = boost::asio;
namespace json = boost::json;

namespace {

using request_error::Bad;

// An error of one line of an import: {"error": {"code", "message" (with
// the line), "field", "line"}}.
HttpResponse LineError(const Status& s, std::size_t line) {
  json::object err{{"code", s.reason()},
                   {"message", "line " + std::to_string(line) + ": " + s.message()},
                   {"line", line}};
  if (!s.field().empty()) err["field"] = s.field();
  return JsonResponse(HttpStatusOf(s), json::serialize(json::object{{"error", std::move(err)}}));
}

struct ExportQuery {
  unsigned states = kAllStates;
  std::size_t limit = AdminHandlers::kDefaultPageLimit;
  std::optional<ExportCursor> cursor;
};

Result<ExportQuery> ParseExportQuery(std::string_view query) {
  ExportQuery out;
  bool states_given = false;
  while (!query.empty()) {
    const std::size_t amp = query.find('&');
    const std::string_view part = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (part.empty()) continue;
    const std::size_t eq = part.find('=');
    const std::string_view key = part.substr(0, eq);
    std::optional<std::string> value =
        PercentDecode(eq == std::string_view::npos ? "" : part.substr(eq + 1));
    if (!value) return Bad("invalid_value", std::string(key), std::string(key) + " is not percent-encoded right");
    if (key == "state") {
      Result<unsigned> states = ParseStateSet(*value, "state");
      if (!states.ok()) return states.status();
      out.states = *states;
      states_given = true;
    } else if (key == "limit") {
      std::size_t n = 0;
      auto [end, ec] = std::from_chars(value->data(), value->data() + value->size(), n);
      if (ec != std::errc() || end != value->data() + value->size() || n < 1 ||
          n > AdminHandlers::kMaxPageLimit) {
        return Bad("invalid_value", "limit",
                   "limit must be 1.." + std::to_string(AdminHandlers::kMaxPageLimit));
      }
      out.limit = n;
    } else if (key == "cursor") {
      Result<ExportCursor> cursor = ParseExportCursor(*value);
      if (!cursor.ok()) return cursor.status();
      out.cursor = std::move(*cursor);
    } else {
      return Bad("unknown_field", std::string(key),
                 "unknown parameter \"" + std::string(key) + "\"; known: state, limit, cursor");
    }
  }
  if (states_given && out.cursor) {
    return Bad("conflicting_fields", "state",
               "state is given when an export starts; the cursor's pages keep it");
  }
  return out;
}

struct FlowLine {
  std::string key;
  FlowSettings settings;
  std::size_t line = 0;
};

struct ExportAnswer {
  std::string body;
  std::optional<std::string> cursor;  // of the next page
};

}  // namespace

AdminHandlers::AdminHandlers(AdminParts parts, ApiLimits limits, AdminControls controls)
    : parts_(std::move(parts)), limits_(limits), controls_(std::move(controls)) {}

asio::awaitable<HttpResponse> AdminHandlers::Backup(const HttpRequest& req) {
  Result<json::value> body = ParseJsonBody(req.body());
  if (!body.ok()) co_return ErrorResponse(body.status());
  const json::object* obj = body->if_object();
  const json::value* to = obj ? obj->if_contains("to") : nullptr;
  if (obj == nullptr || to == nullptr || !to->is_string() || obj->size() != 1) {
    co_return ErrorResponse(Bad(to && !to->is_string() ? "invalid_type" : "missing_field", "to",
                                "the body must be {\"to\": \"/absolute/new/directory\"} (a "
                                "directory on the server's machine)"));
  }
  const std::string dir(to->as_string());
  const std::int64_t now_ms = parts_.clock.WallMs();
  auto call = BackgroundCall(parts_.pool, [&backups = parts_.backups, dir, now_ms] {
    return backups.Take(dir, now_ms, TICKWHEEL_VERSION);
  });
  Result<BackupResult> r = co_await std::move(call);  // its own statement (GCC 12)
  if (!r.ok()) co_return ErrorResponse(r.status());
  co_return JsonResponse(
      201, json::serialize(json::object{{"dir", r->dir},
                                        {"bytes", r->bytes},
                                        {"files", r->files},
                                        {"took_ms", r->took_ms},
                                        {"record_format", r->manifest.record_format},
                                        {"server_version", r->manifest.server_version},
                                        {"taken_ms", r->manifest.taken_ms}}));
}

asio::awaitable<HttpResponse> AdminHandlers::Export(std::string_view query) {
  Result<ExportQuery> q = ParseExportQuery(query);
  if (!q.ok()) co_return ErrorResponse(q.status());
  auto call = StoreRead(
      parts_.calls, [&exports = parts_.exports, q = *q, kind = parts_.store_kind]() -> Result<ExportAnswer> {
        ExportAnswer out;
        ExportCursor cursor;
        if (q.cursor) {
          cursor = *q.cursor;
        } else {
          Result<ExportSessions::Started> started = exports.Start(q.states);
          if (!started.ok()) return started.status();
          out.body = ExportHeaderLine(
              {TICKWHEEL_VERSION, kind, started->taken_ms, started->states, started->counts});
          cursor.session = started->session;
        }
        Result<ExportSessions::PageOut> page = exports.Page(cursor, q.limit, kPageBytes);
        if (!page.ok()) {
          if (!q.cursor) exports.Finish(cursor.session);
          return page.status();
        }
        for (const TimerRecord& r : page->records) out.body += ExportTimerLine(r);
        if (page->rest) {
          for (const ScheduleRow& row : page->rest->schedules) out.body += ExportScheduleLine(row);
          for (const auto& [key, settings] : page->rest->flows) {
            out.body += ExportFlowLine(key, settings);
          }
        }
        if (page->next) {
          out.cursor = EncodeExportCursor({cursor.session, page->next});
        } else {
          exports.Finish(cursor.session);
          out.body += ExportEndLine();
        }
        return out;
      });
  Result<ExportAnswer> answer = co_await std::move(call);  // its own statement (GCC 12)
  if (!answer.ok()) co_return ErrorResponse(answer.status());
  HttpResponse res = JsonResponse(200, std::move(answer->body));
  res.set(boost::beast::http::field::content_type, "application/x-ndjson");
  if (answer->cursor) res.set("Tickwheel-Export-Cursor", *answer->cursor);
  co_return res;
}

asio::awaitable<HttpResponse> AdminHandlers::Import(const HttpRequest& req) {
  const std::int64_t now_ms = parts_.clock.WallMs();
  auto batch = std::make_shared<ImportBatch>();
  std::vector<std::size_t> lines;  // of each record, 1-based within the body
  std::vector<std::size_t> schedule_lines;  // of each schedule
  std::vector<FlowLine> flows;
  std::set<std::string_view> ids;
  std::string_view body = req.body();
  std::size_t line_no = 0;
  std::size_t lines_seen = 0;
  while (!body.empty()) {
    const std::size_t nl = body.find('\n');
    std::string_view line = body.substr(0, nl);
    body = nl == std::string_view::npos ? std::string_view() : body.substr(nl + 1);
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    if (++lines_seen > limits_.max_batch) {
      co_return ErrorResponse(Status::TooLarge(
          "batch_too_large", "an import request takes at most " +
                                 std::to_string(limits_.max_batch) +
                                 " lines; send the file in parts (tickwheel import does)"));
    }
    Result<ImportLine> parsed = ParseImportLine(line, limits_, now_ms);
    if (!parsed.ok()) co_return LineError(parsed.status(), line_no);
    switch (parsed->kind) {
      case ImportLine::Kind::kTimer:
        batch->records.push_back(std::move(parsed->record));
        lines.push_back(line_no);
        break;
      case ImportLine::Kind::kSchedule:
        batch->schedules.push_back(std::move(parsed->schedule));
        schedule_lines.push_back(line_no);
        break;
      case ImportLine::Kind::kFlow:
        flows.push_back({std::move(parsed->flow_key), parsed->flow_settings, line_no});
        break;
      case ImportLine::Kind::kHeader:
      case ImportLine::Kind::kEnd:
        break;
    }
  }
  for (std::size_t i = 0; i < batch->records.size(); ++i) {
    if (!ids.insert(batch->records[i].id).second) {
      co_return LineError(Bad("duplicate_id", "id",
                              "id \"" + batch->records[i].id + "\" appears twice in the request"),
                          lines[i]);
    }
  }
  std::set<std::string_view> schedule_ids;
  for (std::size_t i = 0; i < batch->schedules.size(); ++i) {
    if (!schedule_ids.insert(batch->schedules[i].id).second) {
      co_return LineError(Bad("duplicate_id", "id",
                              "schedule \"" + batch->schedules[i].id +
                                  "\" appears twice in the request"),
                          schedule_lines[i]);
    }
  }
  json::array conflicts;
  // Flow settings first, one at a time, as a PUT's are (through the flow
  // service: this node's limits change at once, the others' within a
  // second); those of a flow that has settings here are left as they are.
  std::size_t flows_created = 0, flows_existing = 0;
  for (const FlowLine& f : flows) {
    auto adopt = StoreBlockingWrite(parts_.calls, [&service = parts_.flows, key = f.key,
                                                   settings = f.settings] {
      return service.Adopt(key, settings);
    });
    Result<std::optional<FlowSettings>> before = co_await std::move(adopt);  // its own statement (GCC 12)
    if (!before.ok()) co_return LineError(before.status(), f.line);
    if (!*before) {
      ++flows_created;
      continue;
    }
    FlowSettings same = **before;
    same.updated_ms = f.settings.updated_ms;
    if (same == f.settings) {
      ++flows_existing;
      continue;
    }
    conflicts.push_back(json::object{
        {"line", f.line},
        {"flow", f.key},
        {"message", "this flow has other settings here; they were left as they are"}});
  }
  if (!batch->records.empty() || !batch->schedules.empty()) {
    auto write = StoreWrite(parts_.calls, batch->ids(), ImportMutation(batch),
                            WriteOptions{.sync = true, .may_run_on_caller = true});
    Status s = co_await std::move(write);  // its own statement (GCC 12)
    if (!s.ok()) co_return ErrorResponse(s);
  }
  for (std::size_t i = 0; i < batch->outcomes.size(); ++i) {
    if (batch->outcomes[i] != ImportOutcome::kConflict) continue;
    conflicts.push_back(json::object{
        {"line", lines[i]},
        {"id", batch->records[i].id},
        {"message", "a different timer with this id exists here; it was left as it is"}});
  }
  for (std::size_t i = 0; i < batch->schedule_outcomes.size(); ++i) {
    if (batch->schedule_outcomes[i] != ImportOutcome::kConflict) continue;
    conflicts.push_back(json::object{
        {"line", schedule_lines[i]},
        {"schedule", batch->schedules[i].id},
        {"message", "a different schedule with this id exists here; it was left as it is"}});
  }
  co_return JsonResponse(
      200, json::serialize(json::object{
               {"lines", lines_seen},
               {"timers", batch->records.size()},
               {"schedules", batch->schedules.size()},
               {"flows", flows.size()},
               {"created", batch->count(ImportOutcome::kCreated) + flows_created},
               {"existing", batch->count(ImportOutcome::kExisting) + flows_existing},
               {"conflicts", std::move(conflicts)}}));
}

asio::awaitable<HttpResponse> AdminHandlers::Delivery(bool pause) {
  controls_.pause_delivery(pause);
  if (pause) {
    // Paused once the attempts in flight have their outcome written.
    auto wait = BackgroundCall(parts_.pool, [in_flight = controls_.in_flight,
                                             until = std::chrono::steady_clock::now() +
                                                     controls_.pause_wait] {
      while (in_flight() > 0 && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      return in_flight();
    });
    const std::int64_t left = co_await std::move(wait);  // its own statement (GCC 12)
    (void)left;
  }
  co_return JsonResponse(200, ModeJson());
}

HttpResponse AdminHandlers::Writes(bool pause) {
  controls_.writes_paused->store(pause);
  return JsonResponse(200, ModeJson());
}

std::string AdminHandlers::ModeJson() const {
  return json::serialize(json::object{
      {"delivery", controls_.delivery_paused() ? "paused" : "running"},
      {"writes", controls_.writes_paused->load() ? "paused" : "accepted"},
      {"in_flight", controls_.in_flight()}});
}

}  // namespace tickwheel::server
