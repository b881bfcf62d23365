// SPDX-License-Identifier: Apache-2.0
// RawConnection: a plain TCP connection to a server on loopback, for tests
// that send what a well-behaved client would not (partial requests, held
// connections, headers as a browser sends them) and read the raw answer.
#ifndef TICKWHEEL_TESTS_SERVER_SUPPORT_RAW_CONNECTION_H_
#define TICKWHEEL_TESTS_SERVER_SUPPORT_RAW_CONNECTION_H_

#include <boost/asio.hpp>
#include <chrono>
#include <string>
#include <string_view>

namespace tickwheel::testing {

// Thread safety: one thread at a time.
//
//   RawConnection c(port);
//   c.Send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
//   EXPECT_EQ(RawConnection::StatusOf(c.ReadResponse()), 200);
class RawConnection {
 public:
  // Connects to 127.0.0.1:`port` from `from` (any 127.x.y.z address is
  // loopback on Linux: a test can be several clients); throws on failure.
  explicit RawConnection(int port, const std::string& from = "127.0.0.1");

  // Writes all of `bytes`; false if the connection is gone.
  bool Send(std::string_view bytes);
  // Reads one response's head and body (by Content-Length); "" if the
  // server closed the connection first or `timeout` passed.
  std::string ReadResponse(std::chrono::milliseconds timeout = std::chrono::seconds(30));
  // True if the server closed the connection (EOF or reset) within `timeout`.
  // What it sent meanwhile is kept (received()).
  bool ClosedWithin(std::chrono::milliseconds timeout);
  // Bytes received and not yet returned by ReadResponse.
  const std::string& received() const { return buffer_; }
  static int StatusOf(const std::string& response);

 private:
  boost::asio::io_context ioc_;
  boost::asio::ip::tcp::socket socket_;
  std::string buffer_;
};

// "METHOD TARGET HTTP/1.1" with Host: 127.0.0.1, `headers` (each ending in
// \r\n) and, if `body` is not empty, Content-Type: application/json.
std::string RawRequest(const std::string& method, const std::string& target,
                       const std::string& body = "", const std::string& headers = "");

}  // namespace tickwheel::testing

#endif  // TICKWHEEL_TESTS_SERVER_SUPPORT_RAW_CONNECTION_H_
