// SPDX-License-Identifier: Apache-2.0
// What every client command shares: the flags that say which server and
// with which token (--server, --token-file, --ca-file, --json), the paths
// of timers (ids checked as the server checks them, then percent-encoded),
// and how an answer is printed and turned into an exit code.
#ifndef TICKWHEEL_APP_CLIENT_H_
#define TICKWHEEL_APP_CLIENT_H_

#include <CLI/CLI.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "cli/blocking_http_client.h"
#include "tickwheel/client.h"

namespace tickwheel::app {

// The default port of --server (and of `serve --listen`).
inline constexpr const char* kDefaultPort = "8080";

struct ClientFlags {
  std::string server = std::string("127.0.0.1:") + kDefaultPort;
  bool json = false;
  std::string token_file;
  std::string ca_file;

  // Adds --server, --json, --token-file and --ca-file to `cmd`.
  void AddTo(CLI::App* cmd);

  // --server with the port defaulted to 8080 ("127.0.0.1" ->
  // "127.0.0.1:8080", "https://h" -> "https://h:8080", "[::1]" ->
  // "[::1]:8080").
  std::string ServerWithPort() const;

  // The C++ client (tickwheel/client.h) for the server with the token
  // (--token-file, else $TICKWHEEL_TOKEN) and --ca-file; null, after saying
  // why on stderr, if the token file cannot be read. `timeout` bounds each
  // call (a backup of a large store takes longer than the default); a 503
  // or a lost connection is tried again `retries` times (saying so on
  // stderr), as the client does.
  std::unique_ptr<client::Client> Client(
      std::chrono::milliseconds timeout = std::chrono::seconds(30), int retries = 3) const;
};

// "/v1/timers/ID" + `suffix`, or nullopt after printing what is wrong with
// `id` (the server's rule: ValidateTimerPathId, 1..128 of letters, digits,
// . _ ~ -, or a schedule's occurrence "<schedule>@<time>"). The id is
// percent-encoded all the same.
std::optional<std::string> TimerPath(std::string_view id, std::string_view suffix = "");

// Percent-encodes everything but RFC 3986's unreserved characters.
std::string PercentEncode(std::string_view text);

enum class Output { kJson, kTimer, kTable, kFields };

// Prints the answer: on success (2xx) raw JSON or for people (`output`),
// and returns kExitOk; otherwise the error's code and message on stderr (with
// what to do about a 401 or 403), and the exit code for it (exit_codes.h).
int Report(const server::HttpCallResult& r, Output output);

// The exit code for an answer that is not a success (exit_codes.h), after
// printing it on stderr.
int ReportError(const server::HttpCallResult& r);

// A CLI11 check for durations ("30s", "1h30m", "0").
CLI::Validator DurationCheck();

}  // namespace tickwheel::app

#endif  // TICKWHEEL_APP_CLIENT_H_
