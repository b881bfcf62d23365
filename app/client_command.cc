#include "client_command.h"

#include <CLI/CLI.hpp>
#include <boost/json.hpp>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>

#include "duration_flag.h"

namespace tickwheel::app {

namespace json = boost::json;

std::unique_ptr<server::BlockingHttpClient> ClientFlags::Client() const {
  server::BlockingHttpClientOptions options;
  options.ca_file = ca_file;
  if (!token_file.empty()) {
    std::ifstream in(token_file);
    std::getline(in, options.bearer_token);
    while (!options.bearer_token.empty() &&
           std::isspace(static_cast<unsigned char>(options.bearer_token.back()))) {
      options.bearer_token.pop_back();
    }
    if (!in && options.bearer_token.empty()) {
      std::fprintf(stderr, "tickwheel: --token-file %s: cannot read a token from it\n",
                   token_file.c_str());
      return nullptr;
    }
  } else if (const char* env = std::getenv("TICKWHEEL_TOKEN")) {
    options.bearer_token = env;
  }
  return std::make_unique<server::BlockingHttpClient>(server, std::move(options));
}

void AddClientFlags(CLI::App& cmd, ClientFlags& flags) {
  cmd.add_option("--server", flags.server,
                 "the server: host:port, or https://host:port for a server with --tls-cert")
      ->capture_default_str();
  cmd.add_flag("--json", flags.json, "print the server's JSON answer as is");
  cmd.add_option("--token-file", flags.token_file,
                 "a file holding the API token (default: $TICKWHEEL_TOKEN)")
      ->check(CLI::ExistingFile);
  cmd.add_option("--ca-file", flags.ca_file, "PEM CA certificates trusted for an https:// --server");
}

int ReportAnswer(const server::HttpCallResult& r, bool raw,
                 const std::function<void(const json::object&)>& print) {
  if (r.status == 0) {
    std::fprintf(stderr, "tickwheel: %s\n", r.error.c_str());
    return 1;
  }
  boost::system::error_code ec;
  json::value v = json::parse(r.body, ec);
  if (r.status >= 200 && r.status < 300) {
    if (ec || !v.is_object() || raw) {
      std::printf("%s\n", r.body.c_str());
    } else {
      print(v.as_object());
    }
    return 0;
  }
  if (!ec && v.is_object() && v.as_object().contains("error")) {
    const auto& e = v.at("error").as_object();
    std::fprintf(stderr, "tickwheel: HTTP %d %s: %s\n", r.status,
                 json::value_to<std::string>(e.at("code")).c_str(),
                 json::value_to<std::string>(e.at("message")).c_str());
  } else {
    std::fprintf(stderr, "tickwheel: HTTP %d: %s\n", r.status, r.body.c_str());
  }
  return 1;
}

CLI::Validator DurationCheck() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        if (!ParseDuration(text)) {
          return "\"" + text + "\" is not a duration (e.g. 30s, 250ms, 2h)";
        }
        return "";
      },
      "DURATION");
}

std::chrono::milliseconds Ms(const std::string& text) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(*ParseDuration(text));
}

std::string FormatTime(std::int64_t ms) {
  const std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  const std::int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
  const std::int64_t delta = ms - now;
  const double abs_ms = static_cast<double>(delta < 0 ? -delta : delta);
  char rel[32];
  if (abs_ms < 1000) {
    std::snprintf(rel, sizeof rel, "%.0fms", abs_ms);
  } else if (abs_ms < 120e3) {
    std::snprintf(rel, sizeof rel, "%.1fs", abs_ms / 1e3);
  } else if (abs_ms < 7200e3) {
    std::snprintf(rel, sizeof rel, "%.0fm", abs_ms / 60e3);
  } else if (abs_ms < 172800e3) {
    std::snprintf(rel, sizeof rel, "%.1fh", abs_ms / 3600e3);
  } else {
    std::snprintf(rel, sizeof rel, "%.1fd", abs_ms / 86400e3);
  }
  char out[128];
  std::snprintf(out, sizeof out, "%s.%03dZ (%s%s%s)", buf, static_cast<int>(ms % 1000),
                delta < 0 ? "" : "in ", rel, delta < 0 ? " ago" : "");
  return out;
}

std::string FormatLocalTime(std::int64_t ms) {
  const std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  localtime_r(&seconds, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S%z %Z", &tm);
  std::string out = buf;
  // %z is "+0100": RFC 3339 wants "+01:00".
  const std::size_t zone = out.find(' ');
  if (zone != std::string::npos && zone >= 5) out.insert(zone - 2, ":");
  return out;
}

std::string Str(const json::object& o, const char* key) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr) return "";
  if (v->is_string()) return std::string(v->as_string());
  return json::serialize(*v);
}

}  // namespace tickwheel::app
