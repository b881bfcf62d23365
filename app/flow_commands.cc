// SPDX-License-Identifier: Apache-2.0
// `tickwheel flow ls|get|set|pause|resume|reset`: flow control per
// destination (GET /v1/flows, GET|PUT|DELETE /v1/flows/{key}, POST
// /v1/flows/{key}:pause and :resume; docs/flows.md, docs/cli.md).
#include <CLI/CLI.hpp>
#include <boost/json.hpp>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>

#include "client.h"
#include "commands.h"
#include "exit_codes.h"
#include "timer/flow_key.h"

namespace tickwheel::app {

namespace json = boost::json;

namespace {

// "/v1/flows/KEY" + `suffix`, or nullopt after saying what is wrong with
// `key` (the server's rule, timer/flow_key.h).
std::optional<std::string> FlowPath(const std::string& key, std::string_view suffix = "") {
  if (server::Status s = server::CheckFlowKey(key, "flow"); !s.ok()) {
    std::fprintf(stderr, "tickwheel: %s\n", s.message().c_str());
    return std::nullopt;
  }
  return "/v1/flows/" + PercentEncode(key) + std::string(suffix);
}

std::string Number(const json::value& v) {
  if (v.is_null()) return "none";
  if (v.is_int64()) return std::to_string(v.as_int64());
  if (v.is_double()) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v.as_double());
    return buf;
  }
  return json::serialize(v);
}

const json::value& At(const json::object& o, const char* key) {
  static const json::value kNull;
  const json::value* v = o.if_contains(key);
  return v ? *v : kNull;
}

// "200/s, burst 50, 8 at once" or "no limit".
std::string Limits(const json::object& f) {
  std::string out;
  if (!At(f, "rate_per_s").is_null()) {
    out = Number(At(f, "rate_per_s")) + "/s, burst " + Number(At(f, "burst"));
  }
  if (!At(f, "max_in_flight").is_null()) {
    out += (out.empty() ? "" : ", ") + Number(At(f, "max_in_flight")) + " at once";
  }
  return out.empty() ? "no limit" : out;
}

std::string State(const json::object& f) {
  std::string out = At(f, "paused").is_bool() && At(f, "paused").as_bool() ? "paused" : "sending";
  if (!At(f, "held_until_ms").is_null()) out += ", held (Retry-After)";
  if (!At(f, "lowered_rate_per_s").is_null()) {
    char buf[64];
    std::snprintf(buf, sizeof buf, ", lowered to %.1f/s (429s)",
                  At(f, "lowered_rate_per_s").to_number<double>());
    out += buf;
  }
  return out;
}

std::string Due(const json::object& f) {
  return Number(At(f, "due")) + (At(f, "due_capped").is_bool() && At(f, "due_capped").as_bool() ? "+" : "");
}

// One flow, for people.
void PrintFlow(const json::object& f) {
  std::printf("flow:        %s%s\n", At(f, "key").as_string().c_str(),
              At(f, "configured").as_bool() ? "" : " (no settings: the server's defaults)");
  std::printf("limits:      %s\n", Limits(f).c_str());
  std::printf("state:       %s\n", State(f).c_str());
  std::printf("due:         %s waiting, %s in flight\n", Due(f).c_str(),
              Number(At(f, "in_flight")).c_str());
  std::printf("last minute: %s sent, %s delivered, %s throttled\n",
              Number(At(f, "sent_last_minute")).c_str(),
              Number(At(f, "delivered_last_minute")).c_str(),
              Number(At(f, "throttled_last_minute")).c_str());
}

int ReportFlow(const server::HttpCallResult& r, bool as_json) {
  if (r.status != 200) return ReportError(r);
  if (as_json) {
    std::printf("%s\n", r.body.c_str());
  } else {
    PrintFlow(json::parse(r.body).as_object());
  }
  return kExitOk;
}

void AddFlowLs(CLI::App* group, int& exit_code, std::shared_ptr<ClientFlags> common) {
  auto after = std::make_shared<std::string>();
  CLI::App* cmd = group->add_subcommand(
      "ls", "List flows: those with settings and those active in the last minute, with their "
            "limits, backlog and last minute");
  common->AddTo(cmd);
  cmd->add_option("--after", *after, "start after this flow key (paging)");
  cmd->callback([after, common, &exit_code] {
    auto client = common->Client();
    if (!client) return void(exit_code = kExitUsage);
    const server::HttpCallResult r = client->Call(
        "GET", "/v1/flows" + (after->empty() ? std::string() : "?after=" + PercentEncode(*after)));
    if (r.status != 200) return void(exit_code = ReportError(r));
    if (common->json) {
      std::printf("%s\n", r.body.c_str());
      return void(exit_code = kExitOk);
    }
    const json::object page = json::parse(r.body).as_object();
    std::printf("%-32s %-30s %-10s %9s %9s %9s %9s\n", "FLOW", "LIMITS", "STATE", "DUE",
                "IN FLIGHT", "SENT/MIN", "THROTTLED");
    for (const json::value& v : page.at("flows").as_array()) {
      const json::object& f = v.as_object();
      std::string key(At(f, "key").as_string());
      if (!At(f, "configured").as_bool()) key += " *";
      std::printf("%-32s %-30s %-10s %9s %9s %9s %9s\n", key.c_str(), Limits(f).c_str(),
                  At(f, "paused").as_bool() ? "paused" : "sending", Due(f).c_str(),
                  Number(At(f, "in_flight")).c_str(), Number(At(f, "sent_last_minute")).c_str(),
                  Number(At(f, "throttled_last_minute")).c_str());
    }
    std::printf("(* no settings: the server's defaults)\n");
    if (page.contains("next_after")) {
      std::printf("(more: --after %s)\n", std::string(page.at("next_after").as_string()).c_str());
    }
    exit_code = kExitOk;
  });
}

void AddFlowGet(CLI::App* group, int& exit_code, std::shared_ptr<ClientFlags> common) {
  auto key = std::make_shared<std::string>();
  CLI::App* cmd = group->add_subcommand("get", "Show a flow: limits, state, backlog, last minute");
  common->AddTo(cmd);
  cmd->add_option("key", *key, "the flow's key (a name, or a target's host:port)")->required();
  cmd->callback([key, common, &exit_code] {
    auto path = FlowPath(*key);
    if (!path) return void(exit_code = kExitUsage);
    auto client = common->Client();
    if (!client) return void(exit_code = kExitUsage);
    exit_code = ReportFlow(client->Call("GET", *path), common->json);
  });
}

// A limit flag: a number, "none" (no limit) or "default" (the server's).
struct LimitFlag {
  std::string text;
  // Sets `field` of `body` as asked; false after saying what is wrong.
  bool Apply(json::object& body, const char* field, const char* flag, bool integer) const {
    if (text.empty()) return true;
    if (text == "default") {
      body.erase(field);
      return true;
    }
    if (text == "none") {
      body[field] = nullptr;
      return true;
    }
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (end == text.c_str() || *end != '\0' || !(v > 0) || (integer && v != std::floor(v))) {
      std::fprintf(stderr, "tickwheel: %s \"%s\": give %s above 0, \"none\" or \"default\"\n",
                   flag, text.c_str(), integer ? "a whole number" : "a number");
      return false;
    }
    if (integer) {
      body[field] = static_cast<std::int64_t>(v);
    } else {
      body[field] = v;
    }
    return true;
  }
};

void AddSet(CLI::App* group, int& exit_code, std::shared_ptr<ClientFlags> common) {
  struct SetFlags {
    std::string key;
    LimitFlag rate, burst, max_in_flight;
  };
  auto flags = std::make_shared<SetFlags>();
  CLI::App* cmd = group->add_subcommand(
      "set", "Set a flow's limits: those given change, the others stay as they are");
  common->AddTo(cmd);
  cmd->add_option("key", flags->key, "the flow's key (a name, or a target's host:port)")
      ->required();
  cmd->add_option("--rate", flags->rate.text,
                  "attempts a second (0.5: one every 2 s); none: no rate limit; default: the "
                  "server's --flow-default-rate");
  cmd->add_option("--burst", flags->burst.text,
                  "how many may start at once after a quiet spell; default: a tenth of a "
                  "second of the rate");
  cmd->add_option("--max-in-flight", flags->max_in_flight.text,
                  "attempts in flight at once; none: no cap; default: the server's "
                  "--flow-default-max-in-flight");
  cmd->callback([flags, common, &exit_code] {
    auto path = FlowPath(flags->key);
    if (!path) return void(exit_code = kExitUsage);
    if (flags->rate.text.empty() && flags->burst.text.empty() &&
        flags->max_in_flight.text.empty()) {
      std::fprintf(stderr, "tickwheel: say what to set: --rate, --burst or --max-in-flight\n");
      return void(exit_code = kExitUsage);
    }
    if (flags->burst.text == "none") {
      std::fprintf(stderr, "tickwheel: --burst cannot be none (use default)\n");
      return void(exit_code = kExitUsage);
    }
    auto client = common->Client();
    if (!client) return void(exit_code = kExitUsage);
    // PUT replaces the settings: start from what is stored.
    const server::HttpCallResult current = client->Call("GET", *path);
    if (current.status != 200) return void(exit_code = ReportError(current));
    json::object body;
    const json::object flow = json::parse(current.body).as_object();
    if (const json::value* stored = flow.if_contains("settings")) {
      body = stored->as_object();
      body.erase("updated_ms");
    }
    if (!flags->rate.Apply(body, "rate_per_s", "--rate", false) ||
        !flags->burst.Apply(body, "burst", "--burst", true) ||
        !flags->max_in_flight.Apply(body, "max_in_flight", "--max-in-flight", true)) {
      return void(exit_code = kExitUsage);
    }
    exit_code = ReportFlow(client->Call("PUT", *path, json::serialize(body)), common->json);
  });
}

void AddAction(CLI::App* group, int& exit_code, std::shared_ptr<ClientFlags> common,
               const char* name, const char* help, const char* method, const char* suffix) {
  auto key = std::make_shared<std::string>();
  CLI::App* cmd = group->add_subcommand(name, help);
  common->AddTo(cmd);
  cmd->add_option("key", *key, "the flow's key (a name, or a target's host:port)")->required();
  cmd->callback([key, common, method, suffix, &exit_code] {
    auto path = FlowPath(*key, suffix);
    if (!path) return void(exit_code = kExitUsage);
    auto client = common->Client();
    if (!client) return void(exit_code = kExitUsage);
    exit_code = ReportFlow(client->Call(method, *path), common->json);
  });
}

}  // namespace

void RegisterFlowCommands(CLI::App& app, int& exit_code) {
  auto common = std::make_shared<ClientFlags>();
  CLI::App* group = app.add_subcommand(
      "flow", "Flow control per destination: rate limits, in-flight caps, pauses (docs/flows.md)");
  group->require_subcommand(1);
  AddFlowLs(group, exit_code, common);
  AddFlowGet(group, exit_code, common);
  AddSet(group, exit_code, common);
  AddAction(group, exit_code, common, "pause",
            "Pause a flow: nothing is sent; its timers stay pending", "POST", ":pause");
  AddAction(group, exit_code, common, "resume",
            "Resume a flow: its timers go out in due order, within its limits", "POST", ":resume");
  AddAction(group, exit_code, common, "reset",
            "Remove a flow's settings: the server's defaults again, not paused", "DELETE", "");
}

}  // namespace tickwheel::app
