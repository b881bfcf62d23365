#include "schedule_commands.h"

#include <CLI/CLI.hpp>
#include <boost/json.hpp>
#include <cstdio>

#include "client_command.h"

namespace tickwheel::app {

namespace json = boost::json;

namespace {

std::string Duration(std::int64_t ms) {
  if (ms % 86'400'000 == 0) return std::to_string(ms / 86'400'000) + "d";
  if (ms % 3'600'000 == 0) return std::to_string(ms / 3'600'000) + "h";
  if (ms % 60'000 == 0) return std::to_string(ms / 60'000) + "m";
  if (ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
  return std::to_string(ms) + "ms";
}

std::string When(const json::object& s) {
  if (s.contains("every_ms")) {
    std::string out = "every " + Duration(s.at("every_ms").as_int64());
    if (s.at("anchor_ms").as_int64() != 0) out += " from " + FormatTime(s.at("anchor_ms").as_int64());
    return out;
  }
  return "cron \"" + Str(s, "cron") + "\" in " + Str(s, "time_zone") + " (dst_gap " +
         Str(s, "dst_gap") + ", dst_overlap " + Str(s, "dst_overlap") + ")";
}

std::string TargetOf(const json::object& s) {
  const json::object& t = s.at("target").as_object();
  return t.contains("nats") ? "nats:" + Str(t, "nats") : Str(t, "url");
}

// One schedule, for people: with its next fire times in this machine's
// zone and in the schedule's, and its last occurrences.
void PrintSchedule(const json::object& s) {
  std::printf("id:          %s\n", Str(s, "id").c_str());
  std::printf("state:       %s%s\n", Str(s, "state").c_str(),
              s.contains("ended_reason") ? (" (" + Str(s, "ended_reason") + ")").c_str() : "");
  std::printf("when:        %s\n", When(s).c_str());
  std::printf("target:      %s\n", TargetOf(s).c_str());
  std::printf("payload:     %s\n", Str(s, "payload").c_str());
  std::printf("policies:    overlap %s; catch-up %s within %s (at most %s)%s\n",
              Str(s, "overlap").c_str(), Str(s, "catch_up").c_str(),
              Duration(s.at("catch_up_window_ms").as_int64()).c_str(),
              Str(s, "catch_up_max").c_str(),
              s.at("jitter_ms").as_int64() > 0
                  ? ("; jitter " + Duration(s.at("jitter_ms").as_int64())).c_str()
                  : "");
  if (s.contains("start_ms")) std::printf("starts:      %s\n", FormatTime(s.at("start_ms").as_int64()).c_str());
  if (s.contains("end_ms")) std::printf("ends:        %s\n", FormatTime(s.at("end_ms").as_int64()).c_str());
  if (s.contains("max_occurrences")) {
    std::printf("occurrences: %s of at most %s\n", Str(s, "occurrences").c_str(),
                Str(s, "max_occurrences").c_str());
  }
  const json::object& c = s.at("counts").as_object();
  const json::object& skipped = c.at("skipped").as_object();
  std::printf("counts:      planned %s, fired %s, skipped %s (overlap), %s (catch-up), %s (DST); "
              "triggered %s, backfilled %s\n",
              Str(c, "planned").c_str(), Str(c, "fired").c_str(), Str(skipped, "overlap").c_str(),
              Str(skipped, "catch_up").c_str(), Str(skipped, "dst").c_str(),
              Str(c, "triggered").c_str(), Str(c, "backfilled").c_str());
  if (const json::value* next = s.if_contains("next"); next && !next->as_array().empty()) {
    std::printf("next fire times:\n  %-34s %s\n", "here (this machine's zone)",
                ("the schedule's zone" + (s.contains("time_zone") ? " (" + Str(s, "time_zone") + ")"
                                                                  : std::string(" (UTC)")))
                    .c_str());
    for (const json::value& v : next->as_array()) {
      const json::object& t = v.as_object();
      std::printf("  %-34s %s %s\n", FormatLocalTime(t.at("at_ms").as_int64()).c_str(),
                  Str(t, "local").c_str(), Str(t, "abbreviation").c_str());
    }
  }
  if (const json::value* last = s.if_contains("last_occurrences");
      last && !last->as_array().empty()) {
    std::printf("last occurrences:\n");
    for (const json::value& v : last->as_array()) {
      const json::object& o = v.as_object();
      std::string outcome = o.contains("status") ? "HTTP " + Str(o, "status") : "";
      if (o.contains("last_error")) outcome += (outcome.empty() ? "" : ", ") + Str(o, "last_error");
      std::printf("  %-40s %-10s %s  %s\n", Str(o, "id").c_str(), Str(o, "state").c_str(),
                  FormatTime(o.at("fire_at_ms").as_int64()).substr(0, 23).c_str(),
                  outcome.c_str());
    }
  }
}

void PrintScheduleTable(const json::object& body) {
  std::printf("%-30s %-8s %-44s %-24s %s\n", "ID", "STATE", "WHEN", "NEXT (UTC)", "TARGET");
  for (const json::value& v : body.at("schedules").as_array()) {
    const json::object& s = v.as_object();
    const std::string next =
        s.contains("next_ms") ? FormatTime(s.at("next_ms").as_int64()).substr(0, 23) : "-";
    std::string when = When(s);
    if (when.size() > 44) when = when.substr(0, 41) + "...";
    std::printf("%-30s %-8s %-44s %-24s %s\n", Str(s, "id").c_str(), Str(s, "state").c_str(),
                when.c_str(), next.c_str(), TargetOf(s).c_str());
  }
  if (body.contains("next_after")) std::printf("(more: --after %s)\n", Str(body, "next_after").c_str());
}

void PrintOccurrence(const json::object& t) {
  std::printf("occurrence %s: %s, due %s\n", Str(t, "id").c_str(), Str(t, "state").c_str(),
              FormatTime(t.at("fire_at_ms").as_int64()).c_str());
}

struct AddFlags {
  std::string id, every, cron, tz, dst_gap, dst_overlap, url, nats, payload;
  std::string jitter, overlap, catch_up, catch_up_window;
  std::int64_t start = -1, end = -1;
  int max_attempts = 0, max_occurrences = 0, catch_up_max = 0;
};

// The create body of `add`; false (saying why) for flags that do not fit.
bool AddBody(const AddFlags& f, json::object& body) {
  body["id"] = f.id;
  if (f.every.empty() == f.cron.empty()) {
    std::fprintf(stderr, "tickwheel: give --every (an interval) or --cron (an expression)\n");
    return false;
  }
  if (!f.every.empty()) body["every_ms"] = Ms(f.every).count();
  if (!f.cron.empty()) body["cron"] = f.cron;
  if (!f.tz.empty()) body["time_zone"] = f.tz;
  if (!f.dst_gap.empty()) body["dst_gap"] = f.dst_gap;
  if (!f.dst_overlap.empty()) body["dst_overlap"] = f.dst_overlap;
  if (f.url.empty() == f.nats.empty()) {
    std::fprintf(stderr, "tickwheel: give --url or --nats\n");
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
  if (f.max_attempts > 0) body["retry"] = json::object{{"max_attempts", f.max_attempts}};
  if (f.start >= 0) body["start_ms"] = f.start;
  if (f.end >= 0) body["end_ms"] = f.end;
  if (f.max_occurrences > 0) body["max_occurrences"] = f.max_occurrences;
  if (!f.jitter.empty()) body["jitter_ms"] = Ms(f.jitter).count();
  if (!f.overlap.empty()) body["overlap"] = f.overlap;
  if (!f.catch_up.empty()) body["catch_up"] = f.catch_up;
  if (!f.catch_up_window.empty()) body["catch_up_window_ms"] = Ms(f.catch_up_window).count();
  if (f.catch_up_max > 0) body["catch_up_max"] = f.catch_up_max;
  return true;
}

}  // namespace

void AddScheduleCommands(CLI::App& app, int& exit_code) {
  CLI::App* schedule = app.add_subcommand("schedule", "Recurring schedules on a server");
  schedule->require_subcommand(1);
  auto common = std::make_shared<ClientFlags>();

  auto add = std::make_shared<AddFlags>();
  CLI::App* add_cmd = schedule->add_subcommand(
      "add", "Create a schedule: --every 5m, or --cron '0 9 * * MON-FRI' --tz Europe/Berlin");
  AddClientFlags(*add_cmd, *common);
  add_cmd->add_option("--id", add->id, "the schedule's id (its name)")->required();
  add_cmd->add_option("--every", add->every, "an interval (e.g. 5m, 1h)")->check(DurationCheck());
  add_cmd->add_option("--cron", add->cron, "a cron expression (5 fields, or 6 with seconds)");
  add_cmd->add_option("--tz", add->tz, "the cron expression's IANA time zone (default UTC)");
  add_cmd->add_option("--dst-gap", add->dst_gap, "a local time that does not exist: shift or skip")
      ->check(CLI::IsMember({"shift", "skip"}));
  add_cmd->add_option("--dst-overlap", add->dst_overlap,
                      "a local time that exists twice: first or both")
      ->check(CLI::IsMember({"first", "both"}));
  add_cmd->add_option("--url", add->url, "webhook to POST each occurrence to");
  add_cmd->add_option("--nats", add->nats, "JetStream subject to publish to (instead of --url)");
  add_cmd->add_option("--payload", add->payload, "JSON payload of each occurrence");
  add_cmd->add_option("--max-attempts", add->max_attempts, "delivery attempts per occurrence")
      ->check(CLI::Range(1, 100));
  add_cmd->add_option("--start-ms", add->start, "no occurrence before this Unix time in ms");
  add_cmd->add_option("--end-ms", add->end, "no occurrence at or after this Unix time in ms");
  add_cmd->add_option("--max-occurrences", add->max_occurrences, "end after this many")
      ->check(CLI::Range(1, 1'000'000'000));
  add_cmd->add_option("--jitter", add->jitter, "delay each occurrence by up to this (e.g. 30s)")
      ->check(DurationCheck());
  add_cmd->add_option("--overlap", add->overlap, "while the previous one runs: allow, skip, buffer_one")
      ->check(CLI::IsMember({"allow", "skip", "buffer_one"}));
  add_cmd->add_option("--catch-up", add->catch_up, "after downtime: none, latest, all")
      ->check(CLI::IsMember({"none", "latest", "all"}));
  add_cmd->add_option("--catch-up-window", add->catch_up_window,
                      "how old a missed occurrence may be to still fire (e.g. 1h)")
      ->check(DurationCheck());
  add_cmd->add_option("--catch-up-max", add->catch_up_max, "at most this many caught up (all)")
      ->check(CLI::Range(1, 1000));
  add_cmd->callback([add, common, &exit_code] {
    json::object body;
    if (!AddBody(*add, body)) return void(exit_code = 2);
    auto client = common->Client();
    if (!client) return void(exit_code = 2);
    exit_code = ReportAnswer(client->Call("POST", "/v1/schedules", json::serialize(body)),
                             common->json, PrintSchedule);
  });

  struct LsFlags {
    std::string state, prefix, after;
    int limit = 100;
  };
  auto ls = std::make_shared<LsFlags>();
  CLI::App* ls_cmd = schedule->add_subcommand("ls", "List schedules");
  AddClientFlags(*ls_cmd, *common);
  ls_cmd->add_option("--state", ls->state, "active, paused or ended (default: all)")
      ->check(CLI::IsMember({"active", "paused", "ended"}));
  ls_cmd->add_option("--prefix", ls->prefix, "ids starting with this");
  ls_cmd->add_option("--limit", ls->limit, "at most this many")
      ->capture_default_str()->check(CLI::Range(1, 1000));
  ls_cmd->add_option("--after", ls->after, "start after this id (paging)");
  ls_cmd->callback([ls, common, &exit_code] {
    auto client = common->Client();
    if (!client) return void(exit_code = 2);
    std::string query = "limit=" + std::to_string(ls->limit);
    if (!ls->state.empty()) query += "&state=" + ls->state;
    if (!ls->prefix.empty()) query += "&prefix=" + ls->prefix;
    if (!ls->after.empty()) query += "&after=" + ls->after;
    exit_code = ReportAnswer(client->Call("GET", "/v1/schedules?" + query), common->json,
                             PrintScheduleTable);
  });

  struct GetFlags {
    std::string id;
    int next = 5;
  };
  auto get = std::make_shared<GetFlags>();
  CLI::App* get_cmd = schedule->add_subcommand(
      "get", "Show a schedule, its next fire times (here and in its zone) and last occurrences");
  AddClientFlags(*get_cmd, *common);
  get_cmd->add_option("id", get->id, "the schedule's id")->required();
  get_cmd->add_option("--next", get->next, "how many next fire times")
      ->capture_default_str()->check(CLI::Range(0, 100));
  get_cmd->callback([get, common, &exit_code] {
    auto client = common->Client();
    if (!client) return void(exit_code = 2);
    exit_code = ReportAnswer(
        client->Call("GET", "/v1/schedules/" + get->id + "?next=" + std::to_string(get->next)),
        common->json, PrintSchedule);
  });

  // pause, resume, trigger, rm: one id each.
  struct Action {
    const char* name;
    const char* help;
    const char* method;
    const char* suffix;
  };
  for (const Action& a : {Action{"pause", "Pause a schedule (nothing fires until resume)", "POST", ":pause"},
                          Action{"resume", "Resume a paused schedule (missed times: its catch-up policy)", "POST", ":resume"},
                          Action{"trigger", "Fire one occurrence now, outside the recurrence", "POST", ":trigger"},
                          Action{"rm", "Delete a schedule and its planned occurrences", "DELETE", ""}}) {
    auto id = std::make_shared<std::string>();
    CLI::App* cmd = schedule->add_subcommand(a.name, a.help);
    AddClientFlags(*cmd, *common);
    cmd->add_option("id", *id, "the schedule's id")->required();
    const bool occurrence = std::string(a.name) == "trigger";
    cmd->callback([id, common, a, occurrence, &exit_code] {
      auto client = common->Client();
      if (!client) return void(exit_code = 2);
      exit_code = ReportAnswer(client->Call(a.method, "/v1/schedules/" + *id + a.suffix),
                               common->json, occurrence ? PrintOccurrence : PrintSchedule);
    });
  }

  struct BackfillFlags {
    std::string id;
    std::int64_t from = 0, to = 0;
  };
  auto backfill = std::make_shared<BackfillFlags>();
  CLI::App* backfill_cmd = schedule->add_subcommand(
      "backfill", "Fire the occurrences of a past range [--from-ms, --to-ms), each once");
  AddClientFlags(*backfill_cmd, *common);
  backfill_cmd->add_option("id", backfill->id, "the schedule's id")->required();
  backfill_cmd->add_option("--from-ms", backfill->from, "from this Unix time in ms")->required();
  backfill_cmd->add_option("--to-ms", backfill->to, "up to this Unix time in ms (excluded)")->required();
  backfill_cmd->callback([backfill, common, &exit_code] {
    auto client = common->Client();
    if (!client) return void(exit_code = 2);
    const json::object body{{"from_ms", backfill->from}, {"to_ms", backfill->to}};
    exit_code = ReportAnswer(
        client->Call("POST", "/v1/schedules/" + backfill->id + ":backfill", json::serialize(body)),
        common->json, [](const json::object& o) {
          std::printf("created %s, existing %s%s\n", Str(o, "created").c_str(),
                      Str(o, "existing").c_str(),
                      o.at("more").as_bool()
                          ? ("; more from " + Str(o, "next_from_ms") + " (run again with it)").c_str()
                          : "");
        });
  });
}

}  // namespace tickwheel::app
