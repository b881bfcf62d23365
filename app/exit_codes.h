// SPDX-License-Identifier: Apache-2.0
// The exit codes of every `tickwheel` command, one set for all of them
// (docs/cli.md lists them; scripts may rely on them).
#ifndef TICKWHEEL_APP_EXIT_CODES_H_
#define TICKWHEEL_APP_EXIT_CODES_H_

namespace tickwheel::app {

enum ExitCode : int {
  kExitOk = 0,
  // The server answered with an error (a 4xx other than 401/403, or a 5xx);
  // `serve`: the server could not start, or stopped on an error. `demo`: a
  // timer fired early.
  kExitFailed = 1,
  // The command line is wrong: an unknown command or flag, a bad value, a
  // missing argument, a token file without a token, or a bulk action not
  // confirmed with --yes.
  kExitUsage = 2,
  // The server could not be reached: refused connection, name not
  // resolved, timeout, TLS handshake failed.
  kExitUnreachable = 3,
  // The server refused the token: none or a wrong one (401), or a read
  // token asked to write (403).
  kExitUnauthorized = 4,
};

}  // namespace tickwheel::app

#endif  // TICKWHEEL_APP_EXIT_CODES_H_
