// SPDX-License-Identifier: Apache-2.0
// The tickwheel executable: one command per job (`tickwheel --help`). Each
// group of commands registers itself (commands.h); this file parses the
// command line and maps every outcome to one documented set of exit codes
// (exit_codes.h, docs/cli.md).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "demo.h"
#include "exit_codes.h"
#ifdef TICKWHEEL_WITH_SERVER
#include "commands.h"
#endif

#ifndef TICKWHEEL_VERSION
#define TICKWHEEL_VERSION "unknown"
#endif

namespace {

bool HasSubcommand(CLI::App& app, const std::string& name) {
  try {
    app.get_subcommand(name);
    return true;
  } catch (const CLI::OptionNotFound&) {
    return false;
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tickwheel::app;
  CLI::App app{"tickwheel " TICKWHEEL_VERSION ": timers at scale\n"
               "Exit codes: 0 ok, 1 the server answered an error, 2 usage, 3 server "
               "unreachable, 4 token refused (docs/cli.md)."};
  app.set_version_flag("--version", "tickwheel " TICKWHEEL_VERSION);
  app.require_subcommand(1);
  app.fallthrough(false);
  int exit_code = kExitOk;
  AddDemoCommand(app, exit_code);
#ifdef TICKWHEEL_WITH_SERVER
  RegisterServeCommand(app, exit_code);
  RegisterTimerCommands(app, exit_code);
  RegisterDeadLetterCommands(app, exit_code);
  RegisterScheduleCommands(app, exit_code);
  RegisterFlowCommands(app, exit_code);
  RegisterInfoCommands(app, exit_code);
  RegisterDataCommands(app, exit_code);
#endif
  // `tickwheel foo`: name the unknown command instead of "A subcommand is
  // required".
  if (argc > 1 && argv[1][0] != '-' && !HasSubcommand(app, argv[1])) {
    std::string known;
    for (const CLI::App* sub :
         app.get_subcommands([](const CLI::App*) { return true; })) {
      known += (known.empty() ? "" : ", ") + sub->get_name();
    }
    std::fprintf(stderr, "tickwheel: unknown command \"%s\" (commands: %s; tickwheel --help)\n",
                 argv[1], known.c_str());
    return kExitUsage;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);  // prints the message and the usage line
    return kExitUsage;
  }
  return exit_code;
}
