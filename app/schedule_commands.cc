// SPDX-License-Identifier: Apache-2.0
// `tickwheel schedule add|ls|get|pause|resume|trigger|backfill|rm`: the
// recurring schedules of a server (docs/schedules.md, docs/cli.md).
#include <CLI/CLI.hpp>
#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <memory>

#include "client.h"
#include "commands.h"
#include "duration_flag.h"
#include "exit_codes.h"
#include "time_flag.h"
#include "timer_output.h"

namespace tickwheel::app {

namespace json = boost::json;

namespace {

std::int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::int64_t DurationMs(const std::string& text) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(*ParseDuration(text)).count();
}

std::string Text(const json::object& o, const char* key) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr) return "";
  if (v->is_string()) return std::string(v->as_string());
  return json::serialize(*v);
}

// "2026-11-26T09:00:00+01:00 CET" in this machine's zone (TZ, else
// /etc/localtime).
std::string LocalHere(std::int64_t ms) {
  const std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  localtime_r(&seconds, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S%z %Z", &tm);
  std::string out = buf;
  const std::size_t space = out.find(' ');  // %z is +0100: RFC 3339 wants +01:00
  if (space != std::string::npos && space >= 5) out.insert(space - 2, ":");
  return out;
}

std::string Span(std::int64_t ms) {
  if (ms % 86'400'000 == 0) return std::to_string(ms / 86'400'000) + "d";
  if (ms % 3'600'000 == 0) return std::to_string(ms / 3'600'000) + "h";
  if (ms % 60'000 == 0) return std::to_string(ms / 60'000) + "m";
  if (ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
  return std::to_string(ms) + "ms";
}

std::string When(const json::object& s) {
  if (s.contains("every_ms")) {
    std::string out = "every " + Span(s.at("every_ms").as_int64());
    if (s.at("anchor_ms").as_int64() != 0) {
      out += " from " + FormatRfc3339(s.at("anchor_ms").as_int64());
    }
    return out;
  }
  return "cron \"" + Text(s, "cron") + "\" in " + Text(s, "time_zone") + " (dst_gap " +
         Text(s, "dst_gap") + ", dst_overlap " + Text(s, "dst_overlap") + ")";
}

std::string TargetOf(const json::object& s) {
  const json::object& t = s.at("target").as_object();
  return t.contains("nats") ? "nats:" + Text(t, "nats") : Text(t, "url");
}

// One schedule, for people: with its next fire times here and in its own
// zone, and its last occurrences.
void PrintSchedule(const json::object& s) {
  const std::int64_t now = NowMs();
  std::printf("id:          %s\n", Text(s, "id").c_str());
  std::printf("state:       %s%s\n", Text(s, "state").c_str(),
              s.contains("ended_reason") ? (" (" + Text(s, "ended_reason") + ")").c_str() : "");
  std::printf("when:        %s\n", When(s).c_str());
  std::printf("target:      %s\n", TargetOf(s).c_str());
  std::printf("payload:     %s\n", Text(s, "payload").c_str());
  std::string policies = "overlap " + Text(s, "overlap") + "; catch-up " + Text(s, "catch_up") +
                         " within " + Span(s.at("catch_up_window_ms").as_int64()) +
                         " (at most " + Text(s, "catch_up_max") + ")";
  if (s.at("jitter_ms").as_int64() > 0) policies += "; jitter " + Span(s.at("jitter_ms").as_int64());
  std::printf("policies:    %s\n", policies.c_str());
  if (s.contains("start_ms")) std::printf("starts:      %s\n", FormatRfc3339(s.at("start_ms").as_int64()).c_str());
  if (s.contains("end_ms")) std::printf("ends:        %s\n", FormatRfc3339(s.at("end_ms").as_int64()).c_str());
  if (s.contains("max_occurrences")) {
    std::printf("occurrences: %s of at most %s\n", Text(s, "occurrences").c_str(),
                Text(s, "max_occurrences").c_str());
  }
  const json::object& c = s.at("counts").as_object();
  const json::object& skipped = c.at("skipped").as_object();
  std::printf("counts:      planned %s, fired %s, skipped %s (overlap) %s (catch-up) %s (DST), "
              "triggered %s, backfilled %s\n",
              Text(c, "planned").c_str(), Text(c, "fired").c_str(), Text(skipped, "overlap").c_str(),
              Text(skipped, "catch_up").c_str(), Text(skipped, "dst").c_str(),
              Text(c, "triggered").c_str(), Text(c, "backfilled").c_str());
  if (const json::value* next = s.if_contains("next"); next && !next->as_array().empty()) {
    const std::string zone = s.contains("time_zone") ? Text(s, "time_zone") : "UTC";
    std::printf("next fire times:\n  %-36s %s\n", "here", ("in " + zone).c_str());
    for (const json::value& v : next->as_array()) {
      const json::object& t = v.as_object();
      const std::int64_t at = t.at("at_ms").as_int64();
      std::printf("  %-36s %s %s  (%s)\n", LocalHere(at).c_str(), Text(t, "local").c_str(),
                  Text(t, "abbreviation").c_str(), FormatTimeAndDelta(at, now).c_str());
    }
  }
  if (const json::value* last = s.if_contains("last_occurrences");
      last && !last->as_array().empty()) {
    std::printf("last occurrences:\n");
    for (const json::value& v : last->as_array()) {
      const json::object& o = v.as_object();
      std::string outcome = o.contains("status") ? "HTTP " + Text(o, "status") : "";
      if (o.contains("last_error")) outcome += (outcome.empty() ? "" : ", ") + Text(o, "last_error");
      std::printf("  %-40s %-10s %s  %s\n", Text(o, "id").c_str(), Text(o, "state").c_str(),
                  FormatRfc3339(o.at("fire_at_ms").as_int64()).c_str(), outcome.c_str());
    }
  }
}

void PrintScheduleTable(const json::object& body) {
  std::printf("%-30s %-8s %-44s %-26s %s\n", "ID", "STATE", "WHEN", "NEXT", "TARGET");
  for (const json::value& v : body.at("schedules").as_array()) {
    const json::object& s = v.as_object();
    const std::string next = s.contains("next_ms") ? FormatRfc3339(s.at("next_ms").as_int64()) : "-";
    std::string when = When(s);
    if (when.size() > 44) when = when.substr(0, 41) + "...";
    std::printf("%-30s %-8s %-44s %-26s %s\n", Text(s, "id").c_str(), Text(s, "state").c_str(),
                when.c_str(), next.c_str(), TargetOf(s).c_str());
  }
  if (body.contains("next_after")) {
    std::printf("(more: --after %s)\n", Text(body, "next_after").c_str());
  }
}

// Runs `call` and prints its answer with `print` (or as JSON with --json).
int Answer(const server::HttpCallResult& r, bool raw, void (*print)(const json::object&)) {
  if (r.status < 200 || r.status >= 300) return ReportError(r);
  boost::system::error_code ec;
  json::value v = json::parse(r.body, ec);
  if (ec || !v.is_object() || raw) {
    std::printf("%s\n", r.body.c_str());
  } else {
    print(v.as_object());
  }
  return kExitOk;
}

// "/v1/schedules/ID" + `suffix`, or nullopt after saying what is wrong with
// the id (a schedule's id follows the rule of timers' ids).
std::optional<std::string> SchedulePath(const std::string& id, const std::string& suffix = "") {
  if (!TimerPath(id)) return std::nullopt;
  if (id.find('@') != std::string::npos) {
    std::fprintf(stderr, "tickwheel: \"%s\" is an occurrence (a timer), not a schedule\n",
                 id.c_str());
    return std::nullopt;
  }
  return "/v1/schedules/" + PercentEncode(id) + suffix;
}

struct AddFlags {
  std::string id, every, cron, tz, dst_gap, dst_overlap, url, nats, payload, backoff;
  std::string start, end, jitter, overlap, catch_up, catch_up_window;
  int max_attempts = 0, max_occurrences = 0, catch_up_max = 0;
};

// The create body of `add`; false (saying why) for flags that do not fit.
bool AddBody(const AddFlags& f, json::object& body) {
  if (!SchedulePath(f.id)) return false;
  body["id"] = f.id;
  if (f.every.empty() == f.cron.empty()) {
    std::fprintf(stderr, "tickwheel: say when: --every INTERVAL (e.g. 5m) or --cron EXPRESSION "
                         "(e.g. '0 9 * * MON-FRI', with --tz ZONE)\n");
    return false;
  }
  if (!f.every.empty()) body["every_ms"] = DurationMs(f.every);
  if (!f.cron.empty()) body["cron"] = f.cron;
  if (!f.tz.empty()) body["time_zone"] = f.tz;
  if (!f.dst_gap.empty()) body["dst_gap"] = f.dst_gap;
  if (!f.dst_overlap.empty()) body["dst_overlap"] = f.dst_overlap;
  if (f.url.empty() == f.nats.empty()) {
    std::fprintf(stderr, "tickwheel: say where to: --url URL or --nats SUBJECT\n");
    return false;
  }
  body["target"] = f.nats.empty() ? json::object{{"url", f.url}} : json::object{{"nats", f.nats}};
  if (!f.payload.empty()) {
    boost::system::error_code ec;
    json::value payload = json::parse(f.payload, ec);
    if (ec) {
      std::fprintf(stderr, "tickwheel: --payload is not valid JSON: %s\n", ec.message().c_str());
      return false;
    }
    body["payload"] = std::move(payload);
  }
  json::object retry;
  if (f.max_attempts > 0) retry["max_attempts"] = f.max_attempts;
  if (!f.backoff.empty()) retry["backoff_ms"] = DurationMs(f.backoff);
  if (!retry.empty()) body["retry"] = std::move(retry);
  for (const auto& [flag, text, key] : {std::tuple{"--start", &f.start, "start_ms"},
                                        std::tuple{"--end", &f.end, "end_ms"}}) {
    if (text->empty()) continue;
    std::int64_t ms = 0;
    std::string error;
    if (!ParseTimeFlag(*text, ms, error)) {
      std::fprintf(stderr, "tickwheel: %s %s\n", flag, error.c_str());
      return false;
    }
    body[key] = ms;
  }
  if (f.max_occurrences > 0) body["max_occurrences"] = f.max_occurrences;
  if (!f.jitter.empty()) body["jitter_ms"] = DurationMs(f.jitter);
  if (!f.overlap.empty()) body["overlap"] = f.overlap;
  if (!f.catch_up.empty()) body["catch_up"] = f.catch_up;
  if (!f.catch_up_window.empty()) body["catch_up_window_ms"] = DurationMs(f.catch_up_window);
  if (f.catch_up_max > 0) body["catch_up_max"] = f.catch_up_max;
  return true;
}

void AddScheduleAdd(CLI::App& group, int& exit_code, std::shared_ptr<ClientFlags> common) {
  auto add = std::make_shared<AddFlags>();
  CLI::App* cmd = group.add_subcommand(
      "add", "Create a schedule: --every 5m, or --cron '0 9 * * MON-FRI' --tz Europe/Berlin");
  common->AddTo(cmd);
  cmd->add_option("--id", add->id, "the schedule's id (its name): 1..128 of letters, digits, . _ ~ -")
      ->required();
  cmd->add_option("--every", add->every, "an interval: 1s .. 10 years (e.g. 5m, 1h30m)")
      ->check(DurationCheck());
  cmd->add_option("--cron", add->cron, "a cron expression: 5 fields, or 6 with seconds first");
  cmd->add_option("--tz", add->tz, "the cron expression's IANA time zone (default UTC)");
  cmd->add_option("--dst-gap", add->dst_gap, "a local time that does not exist: shift or skip")
      ->check(CLI::IsMember({"shift", "skip"}));
  cmd->add_option("--dst-overlap", add->dst_overlap, "a local time that exists twice: first or both")
      ->check(CLI::IsMember({"first", "both"}));
  cmd->add_option("--url", add->url, "webhook to POST each occurrence to");
  cmd->add_option("--nats", add->nats, "JetStream subject to publish to (instead of --url)");
  cmd->add_option("--payload", add->payload, "JSON payload of each occurrence");
  cmd->add_option("--max-attempts", add->max_attempts, "delivery attempts per occurrence")
      ->check(CLI::Range(1, 100));
  cmd->add_option("--backoff", add->backoff, "first retry delay, doubled per attempt")
      ->check(DurationCheck());
  cmd->add_option("--start", add->start, "no occurrence before this time (RFC 3339)");
  cmd->add_option("--end", add->end, "no occurrence at or after this time (RFC 3339)");
  cmd->add_option("--max-occurrences", add->max_occurrences, "end after this many fired")
      ->check(CLI::Range(1, 1'000'000'000));
  cmd->add_option("--jitter", add->jitter, "delay each occurrence by up to this (e.g. 30s)")
      ->check(DurationCheck());
  cmd->add_option("--overlap", add->overlap, "while the previous one runs: allow, skip, buffer_one")
      ->check(CLI::IsMember({"allow", "skip", "buffer_one"}));
  cmd->add_option("--catch-up", add->catch_up, "times missed while down: none, latest, all")
      ->check(CLI::IsMember({"none", "latest", "all"}));
  cmd->add_option("--catch-up-window", add->catch_up_window,
                  "a missed time older than this never fires (default 1h)")
      ->check(DurationCheck());
  cmd->add_option("--catch-up-max", add->catch_up_max, "at most this many caught up (all)")
      ->check(CLI::Range(1, 1000));
  cmd->callback([add, common, &exit_code] {
    json::object body;
    if (!AddBody(*add, body)) return void(exit_code = kExitUsage);
    auto client = common->Client();
    if (!client) return void(exit_code = kExitUsage);
    exit_code = Answer(client->Call("POST", "/v1/schedules", json::serialize(body)), common->json,
                       PrintSchedule);
  });
}

void AddScheduleLs(CLI::App& group, int& exit_code, std::shared_ptr<ClientFlags> common) {
  struct LsFlags {
    std::string state, prefix, after;
    int limit = 100;
  };
  auto ls = std::make_shared<LsFlags>();
  CLI::App* cmd = group.add_subcommand("ls", "List schedules in id order (all states by default)");
  common->AddTo(cmd);
  cmd->add_option("--state", ls->state, "active, paused or ended")
      ->check(CLI::IsMember({"active", "paused", "ended"}));
  cmd->add_option("--prefix", ls->prefix, "ids starting with this");
  cmd->add_option("--limit", ls->limit, "at most this many")
      ->capture_default_str()->check(CLI::Range(1, 1000));
  cmd->add_option("--after", ls->after, "start after this id (the last page's next_after)");
  cmd->callback([ls, common, &exit_code] {
    auto client = common->Client();
    if (!client) return void(exit_code = kExitUsage);
    std::string query = "limit=" + std::to_string(ls->limit);
    if (!ls->state.empty()) query += "&state=" + ls->state;
    if (!ls->prefix.empty()) query += "&prefix=" + PercentEncode(ls->prefix);
    if (!ls->after.empty()) query += "&after=" + PercentEncode(ls->after);
    exit_code = Answer(client->Call("GET", "/v1/schedules?" + query), common->json,
                       PrintScheduleTable);
  });
}

void AddScheduleGet(CLI::App& group, int& exit_code, std::shared_ptr<ClientFlags> common) {
  struct GetFlags {
    std::string id;
    int next = 5;
  };
  auto get = std::make_shared<GetFlags>();
  CLI::App* cmd = group.add_subcommand(
      "get", "Show a schedule: its next fire times here and in its zone, its last occurrences");
  common->AddTo(cmd);
  cmd->add_option("id", get->id, "the schedule's id")->required();
  cmd->add_option("--next", get->next, "how many next fire times")
      ->capture_default_str()->check(CLI::Range(0, 100));
  cmd->callback([get, common, &exit_code] {
    std::optional<std::string> path = SchedulePath(get->id, "?next=" + std::to_string(get->next));
    if (!path) return void(exit_code = kExitUsage);
    auto client = common->Client();
    if (!client) return void(exit_code = kExitUsage);
    exit_code = Answer(client->Call("GET", *path), common->json, PrintSchedule);
  });
}

// A command on one schedule: `name ID`, `method` on its path + `suffix`.
void AddOnSchedule(CLI::App& group, int& exit_code, std::shared_ptr<ClientFlags> common,
                   const char* name, const char* help, const char* method, const char* suffix,
                   void (*print)(const json::object&)) {
  auto id = std::make_shared<std::string>();
  CLI::App* cmd = group.add_subcommand(name, help);
  common->AddTo(cmd);
  cmd->add_option("id", *id, "the schedule's id")->required();
  cmd->callback([id, common, method, suffix, print, &exit_code] {
    std::optional<std::string> path = SchedulePath(*id, suffix);
    if (!path) return void(exit_code = kExitUsage);
    auto client = common->Client();
    if (!client) return void(exit_code = kExitUsage);
    exit_code = Answer(client->Call(method, *path), common->json, print);
  });
}

void PrintOccurrence(const json::object& t) { PrintTimer(t, NowMs()); }

void AddBackfill(CLI::App& group, int& exit_code, std::shared_ptr<ClientFlags> common) {
  struct Flags {
    std::string id, from, to;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = group.add_subcommand(
      "backfill", "Fire the occurrences of a past range [--from, --to), each once");
  common->AddTo(cmd);
  cmd->add_option("id", flags->id, "the schedule's id")->required();
  cmd->add_option("--from", flags->from, "from this time (RFC 3339)")->required();
  cmd->add_option("--to", flags->to, "up to this time, excluded (RFC 3339; default now)");
  cmd->callback([flags, common, &exit_code] {
    std::optional<std::string> path = SchedulePath(flags->id, ":backfill");
    if (!path) return void(exit_code = kExitUsage);
    json::object body;
    std::int64_t from = 0, to = NowMs();
    std::string error;
    if (!ParseTimeFlag(flags->from, from, error)) {
      std::fprintf(stderr, "tickwheel: --from %s\n", error.c_str());
      return void(exit_code = kExitUsage);
    }
    if (!flags->to.empty() && !ParseTimeFlag(flags->to, to, error)) {
      std::fprintf(stderr, "tickwheel: --to %s\n", error.c_str());
      return void(exit_code = kExitUsage);
    }
    body["from_ms"] = from;
    body["to_ms"] = to;
    auto client = common->Client();
    if (!client) return void(exit_code = kExitUsage);
    exit_code = Answer(client->Call("POST", *path, json::serialize(body)), common->json,
                       [](const json::object& o) {
                         std::printf("created %s, existing %s\n", Text(o, "created").c_str(),
                                     Text(o, "existing").c_str());
                         if (o.at("more").as_bool()) {
                           std::printf("more: run again with --from %s\n",
                                       FormatRfc3339(o.at("next_from_ms").as_int64()).c_str());
                         }
                       });
  });
}

}  // namespace

void RegisterScheduleCommands(CLI::App& app, int& exit_code) {
  CLI::App* group = app.add_subcommand("schedule", "Recurring schedules: add, ls, get, pause, "
                                                   "resume, trigger, backfill, rm");
  group->require_subcommand(1);
  auto common = std::make_shared<ClientFlags>();
  AddScheduleAdd(*group, exit_code, common);
  AddScheduleLs(*group, exit_code, common);
  AddScheduleGet(*group, exit_code, common);
  AddOnSchedule(*group, exit_code, common, "pause", "Pause a schedule: nothing fires until resume",
                "POST", ":pause", PrintSchedule);
  AddOnSchedule(*group, exit_code, common, "resume",
                "Resume a paused schedule (times missed meanwhile: its catch-up policy)", "POST",
                ":resume", PrintSchedule);
  AddOnSchedule(*group, exit_code, common, "trigger",
                "Fire one occurrence now, outside the recurrence", "POST", ":trigger",
                PrintOccurrence);
  AddBackfill(*group, exit_code, common);
  AddOnSchedule(*group, exit_code, common, "rm",
                "Delete a schedule and its planned occurrences", "DELETE", "", PrintSchedule);
}

}  // namespace tickwheel::app
