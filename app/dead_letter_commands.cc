// SPDX-License-Identifier: Apache-2.0
// `tickwheel dead-letters retry|delete`: the bulk actions on failed timers
// (POST /v1/timers:retry-failed and :delete-failed). Each first asks the
// server for a dry run and prints how many timers match; it acts only with
// --yes, or after a "y" on a terminal (docs/cli.md).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <boost/json.hpp>
#include <cstdio>
#include <iostream>
#include <memory>

#include "client.h"
#include "commands.h"
#include "exit_codes.h"
#include "time_flag.h"

namespace tickwheel::app {

namespace json = boost::json;

namespace {

struct BulkFlags {
  std::string prefix, host, failed_before;
  bool all = false;
  bool yes = false;
  bool dry_run = false;
};

std::int64_t Int(const json::object& o, const char* key) {
  const json::value* v = o.if_contains(key);
  return v && v->is_int64() ? v->as_int64() : 0;
}

void AddBulk(CLI::App* parent, int& exit_code, std::shared_ptr<ClientFlags> common,
             const char* name, const char* verb, const char* route) {
  auto flags = std::make_shared<BulkFlags>();
  CLI::App* cmd = parent->add_subcommand(
      name, std::string(verb) +
                " failed timers matching a filter (--prefix, --host) or --all; prints the "
                "count first, acts with --yes");
  common->AddTo(cmd);
  cmd->add_option("--prefix", flags->prefix, "only ids starting with this");
  cmd->add_option("--host", flags->host, "only timers whose target URL has this host");
  cmd->add_option("--failed-before", flags->failed_before,
                  "only timers that failed before this RFC 3339 time (default: now)");
  cmd->add_flag("--all", flags->all, "every failed timer (when no filter is given)");
  cmd->add_flag("--dry-run", flags->dry_run, "only count the matching timers");
  cmd->add_flag("--yes,-y", flags->yes, "act without asking");
  cmd->callback([flags, common, verb, route, &exit_code] {
    json::object body;
    if (!flags->prefix.empty()) body["prefix"] = flags->prefix;
    if (!flags->host.empty()) body["host"] = flags->host;
    if (body.empty() && !flags->all) {
      std::fprintf(stderr,
                   "tickwheel: say which: --prefix ID_PREFIX, --host HOST, or --all for every "
                   "failed timer\n");
      return void(exit_code = kExitUsage);
    }
    if (body.empty()) body["all"] = true;
    if (!flags->failed_before.empty()) {
      std::int64_t ms = 0;
      std::string error;
      if (!ParseTimeFlag(flags->failed_before, ms, error)) {
        std::fprintf(stderr, "tickwheel: --failed-before %s\n", error.c_str());
        return void(exit_code = kExitUsage);
      }
      body["failed_before_ms"] = ms;
    }
    auto client = common->Client();
    if (!client) return void(exit_code = kExitUsage);
    // The dry run: how many, and the bound the real run keeps to (so that
    // timers failing meanwhile are left alone).
    json::object dry = body;
    dry["dry_run"] = true;
    server::HttpCallResult r = client->Call("POST", route, json::serialize(dry));
    if (r.status != 200) return void(exit_code = ReportError(r));
    json::object counted = json::parse(r.body).as_object();
    const std::int64_t matched = Int(counted, "matched");
    const bool capped = counted.contains("more") && counted.at("more").as_bool();
    if (common->json && (flags->dry_run || matched == 0)) {
      std::printf("%s\n", r.body.c_str());
      return void(exit_code = kExitOk);
    }
    if (!common->json) {
      std::printf("%s%lld failed timer%s match%s\n", capped ? "at least " : "",
                  static_cast<long long>(matched), matched == 1 ? "" : "s",
                  matched == 1 ? "es" : "");
    }
    if (flags->dry_run || matched == 0) return void(exit_code = kExitOk);
    if (!flags->yes) {
      if (!isatty(STDIN_FILENO)) {
        std::fprintf(stderr, "tickwheel: nothing done: add --yes to %s them\n", verb);
        return void(exit_code = kExitUsage);
      }
      std::printf("%s them? [y/N] ", verb);
      std::fflush(stdout);
      std::string answer;
      std::getline(std::cin, answer);
      if (answer != "y" && answer != "Y" && answer != "yes") {
        std::printf("nothing done\n");
        return void(exit_code = kExitOk);
      }
    }
    body["failed_before_ms"] = counted.at("failed_before_ms");
    std::int64_t done = 0;
    for (;;) {  // the server acts on a bounded number per call
      r = client->Call("POST", route, json::serialize(body));
      if (r.status != 200) return void(exit_code = ReportError(r));
      json::object answer = json::parse(r.body).as_object();
      done += Int(answer, "done");
      const bool more = answer.contains("more") && answer.at("more").as_bool();
      if (!more || Int(answer, "done") == 0) break;
    }
    if (common->json) {
      std::printf("%s\n", json::serialize(json::object{{"matched", matched}, {"done", done}})
                              .c_str());
    } else {
      std::printf("%s: %lld\n", verb, static_cast<long long>(done));
    }
    exit_code = kExitOk;
  });
}

}  // namespace

void RegisterDeadLetterCommands(CLI::App& app, int& exit_code) {
  auto common = std::make_shared<ClientFlags>();
  CLI::App* group = app.add_subcommand(
      "dead-letters", "Retry or delete failed timers in bulk (tickwheel ls --state failed lists them)");
  group->require_subcommand(1);
  AddBulk(group, exit_code, common, "retry", "retry", "/v1/timers:retry-failed");
  AddBulk(group, exit_code, common, "delete", "delete", "/v1/timers:delete-failed");
}

}  // namespace tickwheel::app
