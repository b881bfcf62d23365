// SPDX-License-Identifier: Apache-2.0
// BlockingHttpClient: one keep-alive HTTP/1.1 or HTTPS connection, one
// request at a time; for the client commands and for tests.
#ifndef TICKWHEEL_SERVER_CLI_BLOCKING_HTTP_CLIENT_H_
#define TICKWHEEL_SERVER_CLI_BLOCKING_HTTP_CLIENT_H_

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <string_view>

namespace tickwheel::server {

struct HttpCallResult {
  int status = 0;      // 0: no answer (see error)
  std::string body;
  std::string error;   // connection-level failure
  std::map<std::string, std::string> headers;  // of the answer; names in lower case
};

struct BlockingHttpClientOptions {
  std::chrono::milliseconds timeout{std::chrono::seconds(30)};
  // Sent as "Authorization: Bearer TOKEN" when not empty.
  std::string bearer_token;
  // https:// servers: PEM CA certificates trusted besides the system's.
  std::string ca_file;
};

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

  HttpCallResult Call(std::string_view method, std::string_view target,
                      std::string_view body = {});

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_CLI_BLOCKING_HTTP_CLIENT_H_
