// SPDX-License-Identifier: Apache-2.0
// The `tickwheel` commands. Each group of subcommands lives in its own file
// and registers itself with CLI11 through one function declared here;
// main.cc calls each of them (in the order `tickwheel --help` lists them).
//
// To add a group (e.g. `tickwheel schedule ...`): write
// app/schedule_commands.cc with `void RegisterScheduleCommands(CLI::App&,
// int& exit_code)`, declare it here, call it in main.cc, and list the file
// in app/CMakeLists.txt. Client commands take their common flags from
// client.h (ClientFlags) and end with `exit_code = Report(...)`, which
// prints the answer and picks the exit code (exit_codes.h).
#ifndef TICKWHEEL_APP_COMMANDS_H_
#define TICKWHEEL_APP_COMMANDS_H_

namespace CLI {
class App;
}  // namespace CLI

namespace tickwheel::app {

// Each adds its subcommands to `app`; the one that runs stores its exit
// code (exit_codes.h) in `exit_code`.
void RegisterServeCommand(CLI::App& app, int& exit_code);      // serve_command.cc
void RegisterTimerCommands(CLI::App& app, int& exit_code);     // timer_commands.cc
void RegisterDeadLetterCommands(CLI::App& app, int& exit_code);  // dead_letter_commands.cc
void RegisterInfoCommands(CLI::App& app, int& exit_code);      // info_commands.cc
void RegisterScheduleCommands(CLI::App& app, int& exit_code);  // schedule_commands.cc
void RegisterFlowCommands(CLI::App& app, int& exit_code);      // flow_commands.cc
// backup, export, import, delivery pause|resume, writes pause|resume
void RegisterDataCommands(CLI::App& app, int& exit_code);      // data_commands.cc

}  // namespace tickwheel::app

#endif  // TICKWHEEL_APP_COMMANDS_H_
