// SPDX-License-Identifier: Apache-2.0
// HttpConnection: one keep-alive HTTP/1.1 or HTTPS connection to a server,
// one exchange at a time, on Boost.Beast coroutines. What the client's
// calls (AsyncClient) and the blocking BlockingHttpClient of the CLI and
// the tests (server/cli/) send through.
#ifndef TICKWHEEL_SRC_CLIENT_HTTP_CONNECTION_H_
#define TICKWHEEL_SRC_CLIENT_HTTP_CONNECTION_H_

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "tickwheel/client.h"

namespace tickwheel::client::internal {

// What one exchange got: the answer, or none (response.status 0,
// response.error) and whether trying again may help (the connection could
// not be made or was lost; not a certificate that is not trusted).
struct Exchanged {
  Response response;
  bool transient = false;
};

// Thread safety: none; one exchange at a time, on the executor given.
// Reconnects when the server closed the connection (a stale keep-alive
// connection is tried once more on a new one).
class HttpConnection {
 public:
  // `server`: host:port, http://host:port or https://host:port (the
  // certificate is verified for the host name or IP address given; the
  // port defaults to 80 or 443). A CA file that cannot be loaded is the
  // error of every exchange.
  HttpConnection(boost::asio::any_io_executor executor, std::string server, std::string ca_file,
                 std::chrono::milliseconds timeout);
  ~HttpConnection();

  // `headers` are sent besides Host, and Content-Type: application/json
  // when `body` is not empty.
  boost::asio::awaitable<Exchanged> Exchange(std::string method, std::string target,
                                             std::string body,
                                             RequestHeaders headers);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tickwheel::client::internal

#endif  // TICKWHEEL_SRC_CLIENT_HTTP_CONNECTION_H_
