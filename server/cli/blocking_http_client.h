// SPDX-License-Identifier: Apache-2.0
// BlockingHttpClient: one keep-alive HTTP/1.1 or HTTPS connection, one
// request at a time, answers as they come (no retries, no token but the
// one given); for tests and benchmarks. It is the C++ client's transport
// (tickwheel/client.h, tickwheel::client::Client::Call) with these
// defaults and the exchange observer below.
#ifndef TICKWHEEL_SERVER_CLI_BLOCKING_HTTP_CLIENT_H_
#define TICKWHEEL_SERVER_CLI_BLOCKING_HTTP_CLIENT_H_

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tickwheel/client.h"

namespace tickwheel::server {

// status 0: no answer (see error); header names in lower case.
using HttpCallResult = client::Response;

struct BlockingHttpClientOptions {
  std::chrono::milliseconds timeout{std::chrono::seconds(30)};
  // Sent as "Authorization: Bearer TOKEN" when not empty.
  std::string bearer_token;
  // https:// servers: PEM CA certificates trusted besides the system's.
  std::string ca_file;
};

// One request and the answer it got, as a client made it.
struct HttpExchange {
  std::string_view method;
  std::string_view target;
  std::string_view request_body;
  bool bearer_token = false;  // one was sent (its value is never passed on)
  const HttpCallResult& result;
  // The headers the caller added (Call's `headers`).
  const std::vector<std::pair<std::string, std::string>>& request_headers;
};
// Called after every exchange that got an answer, by every client of the
// process, on the calling thread: tests record what the API answered to
// check it against docs/openapi.json (tests/server/contract). Set it
// before any client is used; nullptr removes it.
using HttpExchangeObserver = void (*)(const HttpExchange&);
void SetHttpExchangeObserver(HttpExchangeObserver observer);

// Thread safety: none; one thread per client. Reconnects when the server
// closed the connection.
class BlockingHttpClient {
 public:
  // `server` is host:port, http://host:port or https://host:port (the
  // certificate is verified, for the host name or IP address given).
  explicit BlockingHttpClient(std::string server,
                              std::chrono::milliseconds timeout = std::chrono::seconds(30));
  BlockingHttpClient(std::string server, BlockingHttpClientOptions options);
  ~BlockingHttpClient();

  // `headers` are sent besides Host, Authorization and Content-Type.
  HttpCallResult Call(std::string_view method, std::string_view target,
                      std::string_view body = {},
                      const std::vector<std::pair<std::string, std::string>>& headers = {});

 private:
  bool bearer_token_;
  client::Client client_;
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_CLI_BLOCKING_HTTP_CLIENT_H_
