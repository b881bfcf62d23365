// SPDX-License-Identifier: Apache-2.0
// `tickwheel stats` and `tickwheel whoami`: what the server holds, and who
// the token is (GET /v1/stats, GET /v1/whoami).
#include <CLI/CLI.hpp>
#include <memory>

#include "client.h"
#include "commands.h"
#include "exit_codes.h"

namespace tickwheel::app {

namespace {

void AddReadCommand(CLI::App& app, int& exit_code, std::shared_ptr<ClientFlags> common,
                    const char* name, const char* help, const char* path) {
  CLI::App* cmd = app.add_subcommand(name, help);
  common->AddTo(cmd);
  cmd->callback([common, path, &exit_code] {
    auto client = common->Client();
    if (!client) return void(exit_code = kExitUsage);
    exit_code = Report(client->Call("GET", path), common->json ? Output::kJson : Output::kFields);
  });
}

}  // namespace

void RegisterInfoCommands(CLI::App& app, int& exit_code) {
  auto common = std::make_shared<ClientFlags>();
  AddReadCommand(app, exit_code, common, "stats",
                 "Show the server's counts by state, what is due soon, its store and version",
                 "/v1/stats");
  AddReadCommand(app, exit_code, common, "whoami",
                 "Show the role of the token in use (admin, read)", "/v1/whoami");
}

}  // namespace tickwheel::app
