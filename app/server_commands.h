// `tickwheel serve` and the client commands that talk to it.
#ifndef TICKWHEEL_APP_SERVER_COMMANDS_H_
#define TICKWHEEL_APP_SERVER_COMMANDS_H_

namespace CLI {
class App;
}  // namespace CLI

namespace tickwheel::app {

// Adds `serve`, and `add`, `get`, `cancel`, `ls` (clients of a server given
// by --server, default 127.0.0.1:8080) to `app`; the exit code of the
// command that ran is stored in `exit_code`.
void RegisterServerCommands(CLI::App& app, int& exit_code);

}  // namespace tickwheel::app

#endif  // TICKWHEEL_APP_SERVER_COMMANDS_H_
