#include "api/http_server.h"

#include <boost/beast/core.hpp>

#include "api/api_error.h"

namespace tickwheel::server {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

HttpServer::HttpServer(asio::io_context& ioc, const tcp::endpoint& at,
                       HttpServerOptions options, HttpHandler handler)
    : ioc_(ioc), acceptor_(ioc), options_(options), handler_(std::move(handler)) {
  acceptor_.open(at.protocol());
  acceptor_.set_option(asio::socket_base::reuse_address(true));
  acceptor_.bind(at);
  acceptor_.listen(asio::socket_base::max_listen_connections);
}

unsigned short HttpServer::port() const { return acceptor_.local_endpoint().port(); }

void HttpServer::Start() { asio::co_spawn(strand_, Accept(), asio::detached); }

void HttpServer::StopAccepting() {
  stopping_->store(true);
  // On the acceptor's strand: never concurrently with the pending accept.
  asio::post(strand_, [this] {
    boost::system::error_code ec;
    acceptor_.close(ec);
  });
}

asio::awaitable<void> HttpServer::Accept() {
  for (;;) {
    boost::system::error_code ec;
    tcp::socket socket = co_await acceptor_.async_accept(
        asio::make_strand(ioc_), asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
      if (!acceptor_.is_open()) co_return;
      continue;  // e.g. too many open files: try again
    }
    auto executor = socket.get_executor();
    asio::co_spawn(executor, Serve(std::move(socket)), asio::detached);
  }
}

asio::awaitable<void> HttpServer::Serve(tcp::socket socket) {
  connections_->fetch_add(1);
  struct Count {
    std::shared_ptr<std::atomic<std::size_t>> c;
    ~Count() { c->fetch_sub(1); }
  } count{connections_};
  beast::tcp_stream stream(std::move(socket));
  stream.socket().set_option(tcp::no_delay(true));
  beast::flat_buffer buffer;
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.body_limit(options_.body_limit);
    parser.header_limit(16 * 1024);
    // Idle keep-alive connections wait up to idle_timeout for a request.
    stream.expires_after(buffer.size() ? options_.read_timeout : options_.idle_timeout);
    boost::system::error_code ec;
    co_await http::async_read(stream, buffer, parser,
                              asio::redirect_error(asio::use_awaitable, ec));
    if (ec == http::error::end_of_stream || ec == beast::error::timeout) break;
    if (ec) {
      HttpResponse res;
      ApiError error{400, "bad_request", "cannot parse the HTTP request: " + ec.message(), ""};
      if (ec == http::error::body_limit) {
        error = {413, "body_too_large",
                 "the request body is over the server's limit of " +
                     std::to_string(options_.body_limit) + " bytes", ""};
      }
      res.result(error.http_status);
      res.version(11);
      res.set(http::field::content_type, "application/json");
      res.body() = ErrorBody(error);
      res.keep_alive(false);
      res.prepare_payload();
      stream.expires_after(options_.read_timeout);
      co_await http::async_write(stream, res, asio::redirect_error(asio::use_awaitable, ec));
      break;
    }
    HttpRequest req = parser.release();
    HttpResponse res = co_await handler_(req);
    res.version(req.version());
    res.keep_alive(req.keep_alive() && !stopping_->load());
    res.prepare_payload();
    stream.expires_after(options_.read_timeout);
    co_await http::async_write(stream, res, asio::redirect_error(asio::use_awaitable, ec));
    if (ec || !res.keep_alive()) break;
  }
  boost::system::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
}

}  // namespace tickwheel::server
