// `tickwheel schedule add|ls|get|pause|resume|trigger|backfill|rm`: the
// recurring schedules of a server (docs/schedules.md).
#ifndef TICKWHEEL_APP_SCHEDULE_COMMANDS_H_
#define TICKWHEEL_APP_SCHEDULE_COMMANDS_H_

namespace CLI {
class App;
}  // namespace CLI

namespace tickwheel::app {

// Adds `schedule` and its subcommands to `app`; the exit code of the one
// that ran is stored in `exit_code`.
void AddScheduleCommands(CLI::App& app, int& exit_code);

}  // namespace tickwheel::app

#endif  // TICKWHEEL_APP_SCHEDULE_COMMANDS_H_
