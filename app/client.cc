// SPDX-License-Identifier: Apache-2.0
#include "client.h"

#include <boost/json.hpp>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "api/timer_request.h"
#include "client/percent_encode.h"  // the C++ client's (src/client/)
#include "duration_flag.h"
#include "exit_codes.h"
#include "timer_output.h"

namespace tickwheel::app {

namespace json = boost::json;

void ClientFlags::AddTo(CLI::App* cmd) {
  cmd->add_option("--server", server,
                  "the server: host[:port] or https://host[:port] for a server with --tls-cert "
                  "(port 8080 when not given)")
      ->capture_default_str();
  cmd->add_flag("--json", json, "print the server's JSON answer as is");
  cmd->add_option("--token-file", token_file,
                  "a file holding the API token (default: $TICKWHEEL_TOKEN)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--ca-file", ca_file, "PEM CA certificates trusted for an https:// --server")
      ->check(CLI::ExistingFile);
}

std::string ClientFlags::ServerWithPort() const {
  const std::size_t scheme = server.find("://");
  const std::size_t host_start = scheme == std::string::npos ? 0 : scheme + 3;
  std::string_view host = std::string_view(server).substr(host_start);
  while (!host.empty() && host.back() == '/') host.remove_suffix(1);
  const std::string base = server.substr(0, host_start) + std::string(host);
  const std::size_t bracket = host.rfind(']');
  const std::size_t colon = host.rfind(':');
  const bool has_port = colon != std::string_view::npos &&
                        (bracket == std::string_view::npos || colon > bracket) &&
                        (host.front() == '[' || host.find(':') == colon);
  return has_port ? base : base + ":" + kDefaultPort;
}

std::unique_ptr<client::Client> ClientFlags::Client(std::chrono::milliseconds timeout,
                                                   int retries) const {
  client::ClientOptions options;
  options.server = ServerWithPort();
  options.timeout = timeout;
  options.ca_file = ca_file;
  options.retries = retries;
  options.on_retry = [](int, const client::Error& e) {
    std::fprintf(stderr, "tickwheel: %s; trying again\n",
                 e.status() == 0 ? e.message().c_str() : e.what());
  };
  if (!token_file.empty()) {
    std::ifstream in(token_file);
    std::string token;
    std::getline(in, token);
    while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) {
      token.pop_back();
    }
    if (token.empty()) {
      std::fprintf(stderr, "tickwheel: --token-file %s: cannot read a token from it\n",
                   token_file.c_str());
      return nullptr;
    }
    options.token = std::move(token);
  }  // else $TICKWHEEL_TOKEN, as the client reads it
  try {
    return std::make_unique<client::Client>(std::move(options));
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "tickwheel: --server: %s\n", e.what());
    return nullptr;
  }
}

std::string PercentEncode(std::string_view text) { return client::internal::PercentEncode(text); }

std::optional<std::string> TimerPath(std::string_view id, std::string_view suffix) {
  if (server::Status s = server::ValidateTimerPathId(id); !s.ok()) {
    std::fprintf(stderr, "tickwheel: id \"%s\": %s\n", std::string(id).c_str(),
                 s.message().c_str());
    return std::nullopt;
  }
  // A schedule's occurrence ("<schedule>@<time>"): '@' may stand in a path.
  const std::size_t at = id.find('@');
  if (at != std::string_view::npos) {
    return "/v1/timers/" + PercentEncode(id.substr(0, at)) + std::string(id.substr(at)) +
           std::string(suffix);
  }
  return "/v1/timers/" + PercentEncode(id) + std::string(suffix);
}

int ReportError(const server::HttpCallResult& r) {
  if (r.status == 0) {
    std::fprintf(stderr, "tickwheel: %s\n", r.error.c_str());
    return kExitUnreachable;
  }
  boost::system::error_code ec;
  json::value v = json::parse(r.body, ec);
  if (!ec && v.is_object() && v.as_object().contains("error") &&
      v.at("error").is_object()) {
    const json::object& e = v.at("error").as_object();
    auto text = [&](const char* key) {
      const json::value* x = e.if_contains(key);
      return x && x->is_string() ? std::string(x->as_string()) : std::string();
    };
    std::fprintf(stderr, "tickwheel: HTTP %d %s: %s\n", r.status, text("code").c_str(),
                 text("message").c_str());
  } else {
    std::fprintf(stderr, "tickwheel: HTTP %d: %s\n", r.status, r.body.c_str());
  }
  if (r.status == 401) {
    std::fprintf(stderr,
                 "tickwheel: this server wants an API token: set TICKWHEEL_TOKEN=TOKEN or pass "
                 "--token-file FILE (a file holding the token)\n");
    return kExitUnauthorized;
  }
  if (r.status == 403) {
    std::fprintf(stderr,
                 "tickwheel: the token is not allowed to do this (a read token cannot change "
                 "anything: use an admin token)\n");
    return kExitUnauthorized;
  }
  return kExitFailed;
}

int Report(const server::HttpCallResult& r, Output output) {
  if (r.status < 200 || r.status >= 300) return ReportError(r);
  boost::system::error_code ec;
  json::value v = json::parse(r.body, ec);
  if (ec || !v.is_object() || output == Output::kJson) {
    std::printf("%s\n", r.body.c_str());
  } else if (output == Output::kTimer) {
    const std::int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                    std::chrono::system_clock::now().time_since_epoch())
                                    .count();
    PrintTimer(v.as_object(), now_ms);
  } else if (output == Output::kTable) {
    PrintTableHeader();
    PrintTableRows(v.as_object());
  } else {
    PrintFields(v.as_object());
  }
  return kExitOk;
}

CLI::Validator DurationCheck() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        if (!ParseDuration(text)) {
          return "\"" + text + "\" is not a duration (e.g. 30s, 250ms, 1h30m, 2d, or 0)";
        }
        return "";
      },
      "DURATION");
}

}  // namespace tickwheel::app
