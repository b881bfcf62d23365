// SPDX-License-Identifier: Apache-2.0
// `tickwheel demo`: the library doing a real job, live.
#ifndef TICKWHEEL_APP_DEMO_H_
#define TICKWHEEL_APP_DEMO_H_

#include <cstddef>

#include "tickwheel/time.h"

namespace CLI {
class App;
}  // namespace CLI

namespace tickwheel::app {

// The seed scenario: a server holds `connections` connections, each closed
// after `timeout` without a heartbeat. Heartbeats come every
// U[heartbeat_min, heartbeat_max] per connection and push the timeout back
// (TimingWheel::MoveTimer); a fraction `silent_rate` of heartbeats is a
// connection's last, so it times out, and a new connection takes its place.
struct DemoOptions {
  std::size_t connections = 1'000'000;
  Duration timeout = std::chrono::seconds(30);
  Duration heartbeat_min = std::chrono::seconds(1);
  Duration heartbeat_max = std::chrono::seconds(10);
  double silent_rate = 0.002;
  std::size_t threads = 2;  // heartbeat threads
  Duration interval = std::chrono::milliseconds(100);  // the wheel's tick
  Duration duration{0};  // 0: until Ctrl-C (SIGINT) or SIGTERM
};

// Runs the demo, printing a line a second. Returns 0, or 1 if a timeout
// ever fired before its connection had been idle for `timeout`.
int RunDemo(const DemoOptions& options);

// Adds the `demo` subcommand to `app`; when it runs, its exit code is
// stored in `exit_code`.
void AddDemoCommand(CLI::App& app, int& exit_code);

}  // namespace tickwheel::app

#endif  // TICKWHEEL_APP_DEMO_H_
