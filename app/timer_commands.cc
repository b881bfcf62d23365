// SPDX-License-Identifier: Apache-2.0
// The client commands on single timers and lists of them: add, get,
// reschedule, cancel, retry, ls (docs/cli.md).
#include <CLI/CLI.hpp>
#include <boost/json.hpp>
#include <cstdio>
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

// --in DURATION | --at TIME, one of them required: a timer that fires "now"
// is asked for with --in 0.
struct WhenFlags {
  std::string in, at;

  void AddTo(CLI::App* cmd, const char* what) {
    auto* in_opt =
        cmd->add_option("--in", in,
                        std::string(what) + " after this long: 30s, 1h30m, 2d, 0 (now)")
            ->check(DurationCheck());
    cmd->add_option("--at", at,
                    std::string(what) +
                        " at this time, RFC 3339: 2026-11-25T20:00:00Z or with an offset "
                        "(+01:00); a bare number is refused (seconds or milliseconds?)")
        ->excludes(in_opt);
  }

  // Sets "delay_ms" or "fire_at_ms" in `body`; false after saying what is
  // wrong.
  bool Fill(json::object& body) const {
    if (in.empty() && at.empty()) {
      std::fprintf(stderr,
                   "tickwheel: say when: --in DURATION (e.g. 30s, 1h30m; --in 0 for now) or "
                   "--at TIME (e.g. 2026-11-25T20:00:00Z)\n");
      return false;
    }
    if (!at.empty()) {
      std::int64_t ms = 0;
      std::string error;
      if (!ParseTimeFlag(at, ms, error)) {
        std::fprintf(stderr, "tickwheel: --at %s\n", error.c_str());
        return false;
      }
      body["fire_at_ms"] = ms;
    } else {
      body["delay_ms"] =
          std::chrono::duration_cast<std::chrono::milliseconds>(*ParseDuration(in)).count();
    }
    return true;
  }
};

// "Name: value" of --header.
bool ParseHeader(const std::string& text, json::object& headers) {
  const std::size_t colon = text.find(':');
  if (colon == std::string::npos || colon == 0) {
    std::fprintf(stderr, "tickwheel: --header \"%s\" must be \"Name: value\"\n", text.c_str());
    return false;
  }
  std::string value = text.substr(colon + 1);
  value.erase(0, value.find_first_not_of(" \t"));
  headers[text.substr(0, colon)] = value;
  return true;
}

void AddTimerAdd(CLI::App& app, int& exit_code, std::shared_ptr<ClientFlags> common) {
  struct AddFlags {
    WhenFlags when;
    std::string url, nats, payload, id, backoff;
    std::vector<std::string> headers;
    int max_attempts = 0;
  };
  auto add = std::make_shared<AddFlags>();
  CLI::App* cmd = app.add_subcommand(
      "add", "Create a timer: tickwheel add --in 30s --url http://127.0.0.1:9000/hook");
  common->AddTo(cmd);
  add->when.AddTo(cmd, "fire");
  auto* url_opt = cmd->add_option("--url", add->url, "webhook to POST to");
  cmd->add_option("--nats", add->nats, "JetStream subject to publish to (instead of --url)")
      ->excludes(url_opt);
  cmd->add_option("--payload", add->payload, "JSON payload (default: none)");
  cmd->add_option("--id", add->id,
                  "the timer's id: 1..128 of letters, digits, . _ ~ - (default: generated)");
  cmd->add_option("--header", add->headers,
                  "\"Name: value\" sent with the webhook (repeat for more)");
  cmd->add_option("--max-attempts", add->max_attempts,
                  "delivery attempts before it is a dead letter (default: the server's)")
      ->check(CLI::Range(1, 100));
  cmd->add_option("--backoff", add->backoff,
                  "first retry delay, doubled per attempt (default: the server's)")
      ->check(DurationCheck());
  cmd->callback([add, common, &exit_code] {
    // Always with an id (made here when not given, as the server makes
    // them), so that the client may send the create again after a 503 or
    // a lost answer: the server answers 200 for the same id and body.
    json::object body;
    if (!add->id.empty() && !TimerPath(add->id)) return void(exit_code = kExitUsage);
    body["id"] = add->id.empty() ? client::NewId() : add->id;
    if (!add->when.Fill(body)) return void(exit_code = kExitUsage);
    if (add->url.empty() && add->nats.empty()) {
      std::fprintf(stderr, "tickwheel: say where to: --url URL or --nats SUBJECT\n");
      return void(exit_code = kExitUsage);
    }
    json::object target;
    if (!add->nats.empty()) {
      target["nats"] = add->nats;
    } else {
      target["url"] = add->url;
    }
    if (!add->headers.empty()) {
      json::object headers;
      for (const std::string& h : add->headers) {
        if (!ParseHeader(h, headers)) return void(exit_code = kExitUsage);
      }
      target["headers"] = std::move(headers);
    }
    body["target"] = std::move(target);
    if (!add->payload.empty()) {
      boost::system::error_code ec;
      json::value payload = json::parse(add->payload, ec);
      if (ec) {
        std::fprintf(stderr, "tickwheel: --payload is not valid JSON: %s\n",
                     ec.message().c_str());
        return void(exit_code = kExitUsage);
      }
      body["payload"] = std::move(payload);
    }
    json::object retry;
    if (add->max_attempts > 0) retry["max_attempts"] = add->max_attempts;
    if (!add->backoff.empty()) {
      retry["backoff_ms"] =
          std::chrono::duration_cast<std::chrono::milliseconds>(*ParseDuration(add->backoff))
              .count();
    }
    if (!retry.empty()) body["retry"] = std::move(retry);
    auto client = common->Client();
    if (!client) return void(exit_code = kExitUsage);
    exit_code = Report(client->Call("POST", "/v1/timers", json::serialize(body)),
                       common->json ? Output::kJson : Output::kTimer);
  });
}

// A command on one timer by id: `name ID`, `method` on its path + `suffix`.
void AddOnTimer(CLI::App& app, int& exit_code, std::shared_ptr<ClientFlags> common,
                const char* name, const char* help, const char* method, const char* suffix) {
  auto id = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(name, help);
  common->AddTo(cmd);
  cmd->add_option("id", *id, "the timer's id")->required();
  cmd->callback([id, common, method, suffix, &exit_code] {
    std::optional<std::string> path = TimerPath(*id, suffix);
    if (!path) return void(exit_code = kExitUsage);
    auto client = common->Client();
    if (!client) return void(exit_code = kExitUsage);
    exit_code = Report(client->Call(method, *path), common->json ? Output::kJson : Output::kTimer);
  });
}

void AddReschedule(CLI::App& app, int& exit_code, std::shared_ptr<ClientFlags> common) {
  struct Flags {
    std::string id;
    WhenFlags when;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "reschedule", "Move a pending timer: tickwheel reschedule ID --in 5m (or --at TIME)");
  common->AddTo(cmd);
  cmd->add_option("id", flags->id, "the timer's id")->required();
  flags->when.AddTo(cmd, "fire");
  cmd->callback([flags, common, &exit_code] {
    std::optional<std::string> path = TimerPath(flags->id);
    if (!path) return void(exit_code = kExitUsage);
    json::object body;
    if (!flags->when.Fill(body)) return void(exit_code = kExitUsage);
    auto client = common->Client();
    if (!client) return void(exit_code = kExitUsage);
    exit_code = Report(client->Call("PATCH", *path, json::serialize(body)),
                       common->json ? Output::kJson : Output::kTimer);
  });
}

void AddTimerLs(CLI::App& app, int& exit_code, std::shared_ptr<ClientFlags> common) {
  struct LsFlags {
    std::string state = "pending";
    int limit = 100;
    std::string after, prefix, host;
    bool all = false;
  };
  auto ls = std::make_shared<LsFlags>();
  CLI::App* cmd = app.add_subcommand(
      "ls", "List timers in one state, oldest due first (pending by default)");
  common->AddTo(cmd);
  cmd->add_option("--state", ls->state, "pending, delivering, delivered, failed, cancelled")
      ->capture_default_str()
      ->check(CLI::IsMember({"pending", "delivering", "delivered", "failed", "cancelled"}));
  cmd->add_option("--limit", ls->limit, "at most this many per page (1..1000)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  auto* after = cmd->add_option(
      "--after", ls->after,
      "continue a listing: the cursor printed after a page (\"(more: --after CURSOR)\"), the "
      "API's next_after");
  cmd->add_flag("--all", ls->all, "follow the pages to the end (each of --limit timers)")
      ->excludes(after);
  cmd->add_option("--prefix", ls->prefix, "only ids starting with this");
  cmd->add_option("--host", ls->host, "only timers whose target URL has this host");
  cmd->callback([ls, common, &exit_code] {
    auto client = common->Client();
    if (!client) return void(exit_code = kExitUsage);
    std::string query = "/v1/timers?state=" + ls->state + "&limit=" + std::to_string(ls->limit);
    if (!ls->prefix.empty()) query += "&prefix=" + PercentEncode(ls->prefix);
    if (!ls->host.empty()) query += "&host=" + PercentEncode(ls->host);
    std::string cursor = ls->after;
    json::array all;  // --all --json: every page's timers in one answer
    bool first = true;
    for (;;) {
      server::HttpCallResult r =
          client->Call("GET", query + (cursor.empty() ? "" : "&after=" + PercentEncode(cursor)));
      if (r.status != 200) return void(exit_code = ReportError(r));
      boost::system::error_code ec;
      json::value v = json::parse(r.body, ec);
      if (ec || !v.is_object()) {
        std::fprintf(stderr, "tickwheel: the server's answer is not JSON: %s\n", r.body.c_str());
        return void(exit_code = kExitFailed);
      }
      json::object& page = v.as_object();
      const json::value* next = page.if_contains("next_after");
      cursor = next && next->is_string() ? std::string(next->as_string()) : "";
      if (common->json) {
        if (!ls->all) {
          std::printf("%s\n", r.body.c_str());
        } else {
          for (json::value& t : page.at("timers").as_array()) all.push_back(std::move(t));
        }
      } else {
        if (first) PrintTableHeader();
        PrintTableRows(page);
      }
      first = false;
      if (!ls->all || cursor.empty()) break;
    }
    if (common->json && ls->all) {
      std::printf("%s\n", json::serialize(json::object{{"timers", std::move(all)}}).c_str());
    } else if (!common->json && !cursor.empty()) {
      std::printf("(more: --after %s)\n", cursor.c_str());
    }
    exit_code = kExitOk;
  });
}

}  // namespace

void RegisterTimerCommands(CLI::App& app, int& exit_code) {
  auto common = std::make_shared<ClientFlags>();
  AddTimerAdd(app, exit_code, common);
  AddOnTimer(app, exit_code, common, "get", "Show a timer: its state, times, attempts", "GET", "");
  AddReschedule(app, exit_code, common);
  AddOnTimer(app, exit_code, common, "cancel", "Cancel a pending timer", "DELETE", "");
  AddOnTimer(app, exit_code, common, "retry",
             "Re-arm a failed timer (a dead letter): it fires again now", "POST", ":retry");
  AddTimerLs(app, exit_code, common);
}

}  // namespace tickwheel::app
