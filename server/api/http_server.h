// HttpServer: HTTP/1.1 on Boost.Beast with keep-alive, a bounded request
// size and timeouts; each request is handed to a coroutine handler.
#ifndef TICKWHEEL_SERVER_API_HTTP_SERVER_H_
#define TICKWHEEL_SERVER_API_HTTP_SERVER_H_

#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <functional>
#include <memory>

namespace tickwheel::server {

using HttpRequest = boost::beast::http::request<boost::beast::http::string_body>;
using HttpResponse = boost::beast::http::response<boost::beast::http::string_body>;
using HttpHandler =
    std::function<boost::asio::awaitable<HttpResponse>(HttpRequest&)>;

struct HttpServerOptions {
  std::size_t body_limit = 16 * 1024 * 1024;  // bytes per request body
  std::chrono::milliseconds read_timeout{std::chrono::seconds(30)};
  std::chrono::milliseconds idle_timeout{std::chrono::seconds(60)};
};

// Thread safety: runs on the io_context it is given (any number of
// threads); each connection is served by one coroutine on its own strand.
// A body over the limit is answered 413 and the connection is closed.
class HttpServer {
 public:
  // Binds and listens; throws boost::system::system_error if it cannot.
  HttpServer(boost::asio::io_context& ioc, const boost::asio::ip::tcp::endpoint& at,
             HttpServerOptions options, HttpHandler handler);

  void Start();
  // Closes the listening socket; open connections finish their current
  // request and close. Any thread.
  void StopAccepting();
  std::size_t open_connections() const { return connections_->load(); }
  unsigned short port() const;

 private:
  boost::asio::awaitable<void> Accept();
  boost::asio::awaitable<void> Serve(boost::asio::ip::tcp::socket socket);

  boost::asio::io_context& ioc_;
  boost::asio::strand<boost::asio::io_context::executor_type> strand_{
      boost::asio::make_strand(ioc_)};
  boost::asio::ip::tcp::acceptor acceptor_;
  HttpServerOptions options_;
  HttpHandler handler_;
  std::shared_ptr<std::atomic<std::size_t>> connections_ =
      std::make_shared<std::atomic<std::size_t>>(0);
  std::shared_ptr<std::atomic<bool>> stopping_ =
      std::make_shared<std::atomic<bool>>(false);
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_API_HTTP_SERVER_H_
