// SPDX-License-Identifier: Apache-2.0
#include "support/exchange_log.h"

#include <errno.h>
#include <unistd.h>

#include <atomic>
#include <boost/json.hpp>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "cli/blocking_http_client.h"
#include "common/base64.h"
#include "common/utf8.h"

namespace tickwheel::testing {

namespace {

namespace json = boost::json;

struct Log {
  std::mutex mutex;
  std::FILE* file = nullptr;
};
std::atomic<Log*> the_log{nullptr};

// Bytes as a JSON string member `name`, or `name`_base64 when they are not
// UTF-8.
void PutBytes(json::object& out, const char* name, std::string_view bytes) {
  if (server::ValidUtf8(bytes) == bytes) {
    out[name] = bytes;
  } else {
    out[std::string(name) + "_base64"] = server::Base64Encode(bytes);
  }
}

void Append(const json::object& line) {
  Log* log = the_log.load();
  if (log == nullptr) return;
  const std::string text = json::serialize(line) + "\n";
  std::lock_guard lock(log->mutex);
  std::fwrite(text.data(), 1, text.size(), log->file);
  std::fflush(log->file);
}

void Observe(const server::HttpExchange& e) {
  json::object line{{"kind", "exchange"},
                    {"method", e.method},
                    {"target", e.target},
                    {"bearer", e.bearer_token},
                    {"status", e.result.status}};
  PutBytes(line, "request_body", e.request_body);
  if (!e.request_headers.empty()) {
    json::array sent;  // [name, value] pairs: a name may repeat
    for (const auto& [name, value] : e.request_headers) sent.push_back(json::array{name, value});
    line["request_headers"] = std::move(sent);
  }
  json::object headers;
  for (const auto& [name, value] : e.result.headers) headers[name] = value;
  line["headers"] = std::move(headers);
  PutBytes(line, "body", e.result.body);
  Append(line);
}

}  // namespace

bool RecordExchangesIfAsked() {
  static const bool recording = [] {
    const char* dir = std::getenv(kExchangeLogVariable);
    if (dir == nullptr || *dir == '\0') return false;
    const std::string path = std::string(dir) + "/" + program_invocation_short_name + "-" +
                             std::to_string(getpid()) + ".jsonl";
    auto* log = new Log();  // lives as long as the process
    log->file = std::fopen(path.c_str(), "a");
    if (log->file == nullptr) {
      std::fprintf(stderr, "%s=%s: cannot write %s\n", kExchangeLogVariable, dir, path.c_str());
      std::abort();
    }
    the_log.store(log);
    server::SetHttpExchangeObserver(&Observe);
    return true;
  }();
  return recording;
}

void RecordDelivery(const std::map<std::string, std::string>& headers, const std::string& body) {
  if (the_log.load() == nullptr) return;
  json::object line{{"kind", "delivery"}};
  json::object h;
  for (const auto& [name, value] : headers) h[name] = value;
  line["headers"] = std::move(h);
  PutBytes(line, "body", body);
  Append(line);
}

}  // namespace tickwheel::testing
