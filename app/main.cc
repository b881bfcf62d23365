// The tickwheel executable: one command per job (`tickwheel --help`).
#include <CLI/CLI.hpp>

#include "demo.h"
#ifdef TICKWHEEL_WITH_SERVER
#include "data_commands.h"
#include "server_commands.h"
#endif

int main(int argc, char** argv) {
  CLI::App app{"tickwheel: timers at scale"};
  app.require_subcommand(1);
  int exit_code = 0;
  tickwheel::app::AddDemoCommand(app, exit_code);
#ifdef TICKWHEEL_WITH_SERVER
  tickwheel::app::RegisterServerCommands(app, exit_code);
  tickwheel::app::RegisterDataCommands(app, exit_code);
#endif
  CLI11_PARSE(app, argc, argv);
  return exit_code;
}
