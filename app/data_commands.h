// Data in and out of a server (docs/operations.md, Backup; Export and
// import; Moving from the embedded store to a cluster): `tickwheel backup`,
// `export`, `import`, and `delivery` / `writes` `pause|resume`.
#ifndef TICKWHEEL_APP_DATA_COMMANDS_H_
#define TICKWHEEL_APP_DATA_COMMANDS_H_

namespace CLI {
class App;
}  // namespace CLI

namespace tickwheel::app {

// Adds the commands to `app`; the one that runs stores its exit code in
// `exit_code`: 0 done, 1 the server refused or failed (or an import found
// conflicts, or a file that ended early), 2 a usage error.
void RegisterDataCommands(CLI::App& app, int& exit_code);

}  // namespace tickwheel::app

#endif  // TICKWHEEL_APP_DATA_COMMANDS_H_
