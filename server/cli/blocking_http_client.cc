#include "cli/blocking_http_client.h"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace tickwheel::server {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

struct BlockingHttpClient::Impl {
  std::string host;
  std::string port;
  std::chrono::milliseconds timeout;
  asio::io_context ioc;
  beast::tcp_stream stream{ioc};
  beast::flat_buffer buffer;
  bool connected = false;

  bool Connect(std::string& error) {
    boost::system::error_code ec;
    tcp::resolver resolver(ioc);
    auto endpoints = resolver.resolve(host, port, ec);
    if (ec) {
      error = "cannot resolve " + host + ": " + ec.message();
      return false;
    }
    stream.expires_after(timeout);
    stream.connect(endpoints, ec);
    if (ec) {
      error = "cannot connect to " + host + ":" + port + ": " + ec.message() +
              " (is `tickwheel serve` running there?)";
      return false;
    }
    stream.socket().set_option(tcp::no_delay(true), ec);
    buffer.clear();
    connected = true;
    return true;
  }
};

BlockingHttpClient::BlockingHttpClient(std::string server,
                                       std::chrono::milliseconds timeout)
    : impl_(std::make_unique<Impl>()) {
  const std::size_t colon = server.rfind(':');
  impl_->host = colon == std::string::npos ? server : server.substr(0, colon);
  impl_->port = colon == std::string::npos ? "80" : server.substr(colon + 1);
  impl_->timeout = timeout;
}

BlockingHttpClient::~BlockingHttpClient() = default;

HttpCallResult BlockingHttpClient::Call(std::string_view method,
                                        std::string_view target,
                                        std::string_view body) {
  HttpCallResult result;
  for (int round = 0; round < 2; ++round) {
    const bool fresh = !impl_->connected;
    if (!impl_->connected && !impl_->Connect(result.error)) return result;
    http::request<http::string_body> req;
    req.method_string(method);
    req.target(target);
    req.version(11);
    req.set(http::field::host, impl_->host + ":" + impl_->port);
    req.keep_alive(true);
    if (!body.empty()) {
      req.set(http::field::content_type, "application/json");
      req.body() = std::string(body);
    }
    req.prepare_payload();
    boost::system::error_code ec;
    impl_->stream.expires_after(impl_->timeout);
    http::write(impl_->stream, req, ec);
    http::response_parser<http::string_body> parser;
    parser.body_limit(256 * 1024 * 1024);
    if (!ec) http::read(impl_->stream, impl_->buffer, parser, ec);
    if (ec) {
      impl_->stream.close();
      impl_->connected = false;
      result.error = "request failed: " + ec.message();
      if (!fresh) continue;  // a stale keep-alive connection: once more
      return result;
    }
    auto res = parser.release();
    result.status = static_cast<int>(res.result_int());
    result.body = std::move(res.body());
    result.error.clear();
    if (!res.keep_alive()) {
      impl_->stream.close();
      impl_->connected = false;
    }
    return result;
  }
  return result;
}

}  // namespace tickwheel::server
