// SPDX-License-Identifier: Apache-2.0
// Helpers for the server's integration tests: a server on loopback, JSON
// calls, metrics.
#ifndef TICKWHEEL_TESTS_SERVER_SERVER_TEST_UTIL_H_
#define TICKWHEEL_TESTS_SERVER_SERVER_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <sys/wait.h>

#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cli/blocking_http_client.h"
#include "support/exchange_log.h"
#include "support/server_process.h"
#include "support/webhook_receiver.h"

namespace tickwheel::testing {

// Every test that includes this records its exchanges with the API when
// TICKWHEEL_EXCHANGE_LOG_DIR is set (the contract test's suites).
inline const bool kExchangesRecorded = RecordExchangesIfAsked();

inline std::int64_t WallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct JsonCall {
  int status = 0;
  boost::json::value body;
  std::string raw;
};

inline JsonCall Call(server::BlockingHttpClient& client, std::string_view method,
                     std::string_view target, std::string_view body = {},
                     const std::vector<std::pair<std::string, std::string>>& headers = {}) {
  server::HttpCallResult r = client.Call(method, target, body, headers);
  JsonCall out;
  out.status = r.status;
  out.raw = r.body;
  boost::system::error_code ec;
  out.body = boost::json::parse(r.body, ec);
  return out;
}

inline std::string ErrorCode(const JsonCall& c) {
  if (!c.body.is_object() || !c.body.as_object().contains("error")) return "";
  return std::string(c.body.at("error").at("code").as_string());
}
inline std::string ErrorField(const JsonCall& c) {
  if (!c.body.is_object() || !c.body.as_object().contains("error")) return "";
  const auto& e = c.body.at("error").as_object();
  return e.contains("field") ? std::string(e.at("field").as_string()) : "";
}
inline std::string State(const JsonCall& c) {
  return c.body.is_object() && c.body.as_object().contains("state")
             ? std::string(c.body.at("state").as_string())
             : "";
}

// The value of an unlabelled metric in /metrics text; -1 if absent.
inline double Metric(server::BlockingHttpClient& client, const std::string& name) {
  std::string text = client.Call("GET", "/metrics").body;
  const std::string key = "\n" + name + " ";
  std::size_t at = text.find(key);
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + key.size()));
}

// The metric once it reads `want`, or its last reading when `within` ran
// out: for a value the server updates just after the event a test waits
// for (an attempt's outcome is recorded after the receiver answered).
inline double MetricSettlesTo(server::BlockingHttpClient& client, const std::string& name,
                              double want, std::chrono::milliseconds within) {
  const auto deadline = std::chrono::steady_clock::now() + within;
  double value = Metric(client, name);
  while (value != want && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    value = Metric(client, name);
  }
  return value;
}

// {"id", "delay_ms", "target": {"url"}} with optional extras (a JSON object
// body without braces, appended).
inline std::string TimerBody(const std::string& id, std::int64_t delay_ms,
                             const std::string& url, const std::string& extra = "") {
  std::string body = "{";
  if (!id.empty()) body += "\"id\":\"" + id + "\",";
  body += "\"delay_ms\":" + std::to_string(delay_ms) + ",\"target\":{\"url\":\"" + url + "\"}";
  if (!extra.empty()) body += "," + extra;
  return body + "}";
}

// The tickwheel executable under test: this build's, or the one
// $TICKWHEEL_TEST_BINARY names (to show that a test fails on an older build).
inline const char* Binary() {
  const char* other = std::getenv("TICKWHEEL_TEST_BINARY");
  return other != nullptr && other[0] != '\0' ? other : TICKWHEEL_BINARY;
}

// Whether `key` (an Idempotency-Key, webhook-id or Nats-Msg-Id) is a
// delivery id of timer `id`: "<id>:<created_ms>".
inline bool IsMessageIdOf(const std::string& key, const std::string& id) {
  return key.size() > id.size() + 1 && key.compare(0, id.size() + 1, id + ":") == 0 &&
         key.find_first_not_of("0123456789", id.size() + 1) == std::string::npos;
}

// Runs `build/tickwheel ARGS` through the shell (stderr with stdout); its
// exit status and output.
inline std::pair<int, std::string> RunTickwheel(const std::string& args,
                                                const std::string& env = "") {
  const std::string cmd = env + (env.empty() ? "" : " ") + Binary() + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  while (std::size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int status = pclose(p);
  return {WEXITSTATUS(status), out};
}

// Writes `text` to `path`.
inline void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

// The bytes of the file at `path` ("" if it cannot be read).
inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace tickwheel::testing

#endif  // TICKWHEEL_TESTS_SERVER_SERVER_TEST_UTIL_H_
