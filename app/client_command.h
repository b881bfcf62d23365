// What the client commands (add, get, ls, schedule ...) share: the flags
// that reach a server, printing its answers, and times for people.
#ifndef TICKWHEEL_APP_CLIENT_COMMAND_H_
#define TICKWHEEL_APP_CLIENT_COMMAND_H_

#include <boost/json/object.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "cli/blocking_http_client.h"

namespace CLI {
class App;
class Validator;
}  // namespace CLI

namespace tickwheel::app {

struct ClientFlags {
  std::string server = "127.0.0.1:8080";
  bool json = false;
  std::string token_file;
  std::string ca_file;

  // A client for --server with the token (--token-file, else
  // $TICKWHEEL_TOKEN) and --ca-file; null, saying why, if the token
  // cannot be read.
  std::unique_ptr<server::BlockingHttpClient> Client() const;
};

// Adds --server, --json, --token-file and --ca-file to `cmd`.
void AddClientFlags(CLI::App& cmd, ClientFlags& flags);

// Prints the answer on success (exit 0): as is with `raw`, else through
// `print`; the error's code and message otherwise (exit 1).
int ReportAnswer(const server::HttpCallResult& r, bool raw,
                 const std::function<void(const boost::json::object&)>& print);

// A CLI11 validator-transform for durations ("30s", "250ms"), and the
// duration it accepted.
CLI::Validator DurationCheck();
std::chrono::milliseconds Ms(const std::string& text);

// "2026-11-23T10:47:40.087Z (in 29.5s)" for Unix ms.
std::string FormatTime(std::int64_t ms);
// The same in this machine's local time zone (TZ, else /etc/localtime):
// "2026-11-23T11:47:40+01:00 CET".
std::string FormatLocalTime(std::int64_t ms);

// A member of `o` as text (strings without quotes, the rest as JSON); ""
// if absent.
std::string Str(const boost::json::object& o, const char* key);

}  // namespace tickwheel::app

#endif  // TICKWHEEL_APP_CLIENT_COMMAND_H_
