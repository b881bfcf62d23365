// BlockingHttpClient: one keep-alive HTTP/1.1 connection, one request at a
// time; for the client commands and for tests.
#ifndef TICKWHEEL_SERVER_CLI_BLOCKING_HTTP_CLIENT_H_
#define TICKWHEEL_SERVER_CLI_BLOCKING_HTTP_CLIENT_H_

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

namespace tickwheel::server {

struct HttpCallResult {
  int status = 0;      // 0: no answer (see error)
  std::string body;
  std::string error;   // connection-level failure
};

// Thread safety: none; one thread per client. Reconnects when the server
// closed the connection.
class BlockingHttpClient {
 public:
  // `server` is host:port.
  explicit BlockingHttpClient(std::string server,
                              std::chrono::milliseconds timeout = std::chrono::seconds(30));
  ~BlockingHttpClient();

  HttpCallResult Call(std::string_view method, std::string_view target,
                      std::string_view body = {});

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_CLI_BLOCKING_HTTP_CLIENT_H_
