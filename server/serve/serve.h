// SPDX-License-Identifier: Apache-2.0
// `tickwheel serve`: runs the server until SIGTERM/SIGINT, then drains.
#ifndef TICKWHEEL_SERVER_SERVE_SERVE_H_
#define TICKWHEEL_SERVER_SERVE_SERVE_H_

#include "serve/serve_options.h"

namespace tickwheel::server {

// Runs the server; returns the process exit code: 0 after a drain (a second
// signal cuts the drain short: attempts in flight stay `delivering` and fire
// again at the next start), 1 if it could not start (the reason logged).
int RunServe(const ServeOptions& options);

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_SERVE_SERVE_H_
