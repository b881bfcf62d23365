// SPDX-License-Identifier: Apache-2.0
// HttpServer: HTTP/1.1 on Boost.Beast with keep-alive, timeouts, and limits
// on connections, request sizes and the memory requests hold; each request
// is handed to a coroutine handler.
#ifndef TICKWHEEL_SERVER_API_HTTP_SERVER_H_
#define TICKWHEEL_SERVER_API_HTTP_SERVER_H_

#include <atomic>
#include <boost/asio.hpp>
#include <boost/asio/ssl/context.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "api/http_response.h"
#include "common/status.h"

namespace tickwheel::server {

using HttpHandler = std::function<boost::asio::awaitable<HttpResponse>(HttpRequest&)>;

struct HttpServerOptions {
  std::size_t body_limit = 8 * 1024 * 1024;  // bytes per request body
  std::size_t header_limit = 16 * 1024;      // bytes of request line and headers
  std::size_t max_connections = 10'000;
  // What the requests being served may hold at once: each reserves its body
  // size times kMemoryPerBodyByte (the body and its JSON tree).
  std::size_t max_request_memory = 256 * 1024 * 1024;
  std::chrono::milliseconds read_timeout{std::chrono::seconds(30)};
  std::chrono::milliseconds idle_timeout{std::chrono::seconds(60)};
  // Answered even over the limits (a health check must see a busy server).
  std::string health_path = "/healthz";
  // HTTPS: every connection starts with a TLS handshake (within
  // read_timeout). Null: plain HTTP.
  std::shared_ptr<boost::asio::ssl::context> tls;
};

// A server-side TLS context from PEM files: the certificate chain and its
// private key (--tls-cert, --tls-key); TLS 1.2 or later. kInvalidArgument
// "bad_flag" saying which file is wrong and why.
Result<std::shared_ptr<boost::asio::ssl::context>> MakeTlsServerContext(
    const std::string& cert_file, const std::string& key_file);

// Over max_connections, up to kOverflowConnections more are accepted to
// answer one request each: the health path normally, anything else 503
// "overloaded"; beyond them a connection is closed at once. A request whose
// body does not fit in what is left of max_request_memory is answered 503
// before its body is read. A body over body_limit is answered 413. When the
// process is out of file descriptors, accepting pauses instead of spinning.
//
// Thread safety: runs on the io_context it is given (any number of
// threads); each connection is served by one coroutine on its own strand.
class HttpServer {
 public:
  static constexpr std::size_t kOverflowConnections = 64;
  static constexpr std::size_t kMemoryPerBodyByte = 7;

  // Binds and listens on each of `at` (the addresses a --listen name
  // resolved to; port 0: one free port shared by all); an address that
  // cannot be bound is skipped with a warning while another one is bound.
  // Throws boost::system::system_error if none can be.
  HttpServer(boost::asio::io_context& ioc, const std::vector<boost::asio::ip::tcp::endpoint>& at,
             HttpServerOptions options, HttpHandler handler);

  void Start();
  // Closes the listening socket; open connections finish their current
  // request and close. Any thread.
  void StopAccepting();
  std::size_t open_connections() const { return state_->connections.load(); }
  std::size_t reserved_memory() const { return state_->memory.load(); }
  // Requests and connections answered 503 or closed because of a limit.
  std::uint64_t overloaded() const { return state_->overloaded.load(); }
  unsigned short port() const;
  // Where it listens.
  std::vector<boost::asio::ip::tcp::endpoint> endpoints() const;

 private:
  // Shared with the connections' coroutines, which may outlive a stop.
  struct State {
    std::atomic<std::size_t> connections{0};
    std::atomic<std::size_t> memory{0};
    std::atomic<bool> stopping{false};
    std::atomic<std::uint64_t> overloaded{0};
  };

  boost::asio::awaitable<void> Accept(boost::asio::ip::tcp::acceptor& acceptor);
  boost::asio::awaitable<void> Serve(boost::asio::ip::tcp::socket socket, bool overflow);
  template <typename Stream>
  boost::asio::awaitable<void> ServeRequests(Stream& stream, bool overflow);

  boost::asio::io_context& ioc_;
  boost::asio::strand<boost::asio::io_context::executor_type> strand_{
      boost::asio::make_strand(ioc_)};
  std::vector<std::unique_ptr<boost::asio::ip::tcp::acceptor>> acceptors_;
  const HttpServerOptions options_;
  const HttpHandler handler_;
  const std::shared_ptr<State> state_ = std::make_shared<State>();
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_API_HTTP_SERVER_H_
