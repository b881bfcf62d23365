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
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "api/http_response.h"
#include "common/status.h"
#include "tickwheel/internal/mutex.h"

namespace tickwheel::server {

using HttpHandler = std::function<boost::asio::awaitable<HttpResponse>(HttpRequest&)>;

// What the application decides from a request's line and headers alone,
// before its body is read or any memory is reserved for it: an answer now
// (a refusal: 401, 404, 415, ...; or a page that needs no body), or the
// handler of the whole request.
struct Admission {
  std::optional<HttpResponse> answer;  // set: sent as is, the body never read
  HttpHandler handle;                  // else: called once the body is in
};
// Called with the request's head (its body is empty). Must not block.
using HttpAdmit = std::function<Admission(const HttpRequest& head)>;

struct HttpServerOptions {
  std::size_t body_limit = 8 * 1024 * 1024;  // bytes per request body
  std::size_t header_limit = 16 * 1024;      // bytes of request line and headers
  std::size_t max_connections = 10'000;
  // Connections one client address may hold at once (IPv4-mapped IPv6
  // addresses count as their IPv4 address); more are closed at accept.
  std::size_t max_connections_per_client = 1'000;
  // What the requests being served may hold at once: each admitted request
  // reserves its body size times kMemoryPerBodyByte (the body and its JSON
  // tree) before its body is read.
  std::size_t max_request_memory = 256 * 1024 * 1024;
  // From a request's first byte to the end of its headers.
  std::chrono::milliseconds header_timeout{std::chrono::seconds(10)};
  // For reading a request's body, and for writing an answer.
  std::chrono::milliseconds read_timeout{std::chrono::seconds(30)};
  // A connection waits this long for the first byte of its next request.
  std::chrono::milliseconds idle_timeout{std::chrono::seconds(60)};
  // Answered even over the limits (a health check must see a busy server).
  std::string health_path = "/healthz";
  // HTTPS: every connection starts with a TLS handshake (within
  // header_timeout). Null: plain HTTP.
  std::shared_ptr<boost::asio::ssl::context> tls;
};

// A server-side TLS context from PEM files: the certificate chain and its
// private key (--tls-cert, --tls-key); TLS 1.2 or later. kInvalidArgument
// "bad_flag" saying which file is wrong and why.
Result<std::shared_ptr<boost::asio::ssl::context>> MakeTlsServerContext(
    const std::string& cert_file, const std::string& key_file);

// Nothing a client sends before the application admits a request costs
// more than its headers: the headers are read within header_timeout of
// their first byte, then `admit` decides from them alone (a token, the
// route, the Content-Type); only an admitted request has its body memory
// reserved (503 "overloaded" when it does not fit in what is left of
// max_request_memory), gets "100 Continue" if it asked for it, and is read
// within read_timeout. An answer given without reading an announced body
// closes the connection (after a short lingering read, so that the client
// sees the answer rather than a reset).
//
// Connections: at most max_connections_per_client per client address, then
// max_connections in all; over the latter, up to kOverflowConnections more
// are accepted to answer one request each: the health path normally,
// anything else 503 "overloaded"; beyond them a connection is closed at
// once. A body over body_limit is answered 413. When the process is out of
// file descriptors, accepting pauses instead of spinning.
//
// Thread safety: runs on the io_contexts it is given; each connection is
// served by one coroutine on its own strand, on one of them.
class HttpServer {
 public:
  static constexpr std::size_t kOverflowConnections = 64;
  static constexpr std::size_t kMemoryPerBodyByte = 7;

  // Binds and listens on each of `at` (the addresses a --listen name
  // resolved to; port 0: one free port shared by all); an address that
  // cannot be bound is skipped with a warning while another one is bound.
  // Throws boost::system::system_error if none can be.
  //
  // Listens on the first of `contexts`, and serves each new connection on
  // the one that held the fewest open connections when the accept that
  // took it began (right after the previous one). Given one context, any
  // number of threads may run it. Given several, each is meant to be run
  // by one thread of its own: a connection then stays on one thread, so a
  // request's steps do not wake the others (docs/performance.md, "A lone
  // create"), and a thread blocked in a request stalls only its own
  // connections.
  HttpServer(std::vector<boost::asio::io_context*> contexts,
             const std::vector<boost::asio::ip::tcp::endpoint>& at, HttpServerOptions options,
             HttpAdmit admit);
  HttpServer(boost::asio::io_context& ioc, const std::vector<boost::asio::ip::tcp::endpoint>& at,
             HttpServerOptions options, HttpAdmit admit)
      : HttpServer(std::vector<boost::asio::io_context*>{&ioc}, at, std::move(options),
                   std::move(admit)) {}

  void Start();
  // From now on every answer closes its connection (clients reconnect,
  // perhaps elsewhere); new connections are still accepted (a drain answers
  // its probes). Any thread.
  void CloseAfterEachAnswer();
  // Closes the listening socket; open connections finish their current
  // request and close. Any thread.
  void StopAccepting();
  std::size_t open_connections() const { return state_->connections.load(); }
  // Connections closed at accept because their client held its limit.
  std::uint64_t refused_per_client() const { return state_->refused_per_client.load(); }
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
    std::atomic<bool> closing{false};
    std::atomic<std::uint64_t> overloaded{0};
    std::atomic<std::uint64_t> refused_per_client{0};
    // Open connections per context (HttpServer's contexts, same order).
    std::vector<std::atomic<std::size_t>> per_context;
    internal::Mutex clients_mutex;
    // Open connections per client address.
    std::unordered_map<std::string, std::size_t> clients TW_GUARDED_BY(clients_mutex);
  };

  boost::asio::awaitable<void> Accept(boost::asio::ip::tcp::acceptor& acceptor);
  // The context holding the fewest open connections (the first on a tie).
  std::size_t LeastBusyContext() const;
  boost::asio::awaitable<void> Serve(boost::asio::ip::tcp::socket socket, std::string client,
                                     std::size_t context, bool overflow);
  // Serves requests until the connection ends; true if it ended with a
  // body left unread (the caller lingers before closing).
  template <typename Stream>
  boost::asio::awaitable<bool> ServeRequests(Stream& stream, bool overflow);
  // 413 body_too_large, or 400 bad_request saying what does not parse.
  Status ParseError(const boost::system::error_code& ec) const;

  const std::vector<boost::asio::io_context*> contexts_;  // not empty
  // The acceptors', on the first context.
  boost::asio::strand<boost::asio::io_context::executor_type> strand_{
      boost::asio::make_strand(*contexts_.front())};
  std::vector<std::unique_ptr<boost::asio::ip::tcp::acceptor>> acceptors_;
  const HttpServerOptions options_;
  const HttpAdmit admit_;
  const std::shared_ptr<State> state_ = std::make_shared<State>();
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_API_HTTP_SERVER_H_
