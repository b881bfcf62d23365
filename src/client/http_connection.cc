// SPDX-License-Identifier: Apache-2.0
#include "client/http_connection.h"

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cctype>

namespace tickwheel::client::internal {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {
constexpr auto kNoThrow = asio::as_tuple(asio::use_awaitable);
}  // namespace

struct HttpConnection::Impl {
  asio::any_io_executor executor;
  std::string host;
  std::string port;
  bool tls = false;
  std::chrono::milliseconds timeout;
  std::unique_ptr<asio::ssl::context> tls_context;
  std::unique_ptr<beast::tcp_stream> plain;
  std::unique_ptr<beast::ssl_stream<beast::tcp_stream>> secure;
  beast::flat_buffer buffer;
  bool connected = false;
  std::string setup_error;  // a CA file that cannot be read

  beast::tcp_stream& lowest() { return tls ? beast::get_lowest_layer(*secure) : *plain; }

  void Close() {
    boost::system::error_code ec;
    if (plain || secure) lowest().socket().close(ec);
    connected = false;
  }

  // Connects; on failure returns why, and whether trying again may help.
  asio::awaitable<std::string> Connect(bool& transient) {
    transient = false;
    if (!setup_error.empty()) co_return setup_error;
    tcp::resolver resolver(executor);
    auto [rec, endpoints] = co_await resolver.async_resolve(host, port, kNoThrow);
    if (rec) co_return "cannot resolve " + host + ": " + rec.message();
    if (tls) {
      secure = std::make_unique<beast::ssl_stream<beast::tcp_stream>>(executor, *tls_context);
    } else {
      plain = std::make_unique<beast::tcp_stream>(executor);
    }
    lowest().expires_after(timeout);
    auto [cec, endpoint] = co_await lowest().async_connect(endpoints, kNoThrow);
    if (cec) {
      transient = true;
      co_return "cannot connect to " + host + ":" + port + ": " + cec.message() +
          " (is `tickwheel serve` running there?)";
    }
    boost::system::error_code ec;
    lowest().socket().set_option(tcp::no_delay(true), ec);
    if (tls) {
      SSL* ssl = secure->native_handle();
      X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
      asio::ip::make_address(host, ec);
      if (!ec) {
        X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str());
      } else {
        SSL_set_tlsext_host_name(ssl, host.c_str());
        X509_VERIFY_PARAM_set1_host(param, host.c_str(), host.size());
      }
      auto [hec] = co_await secure->async_handshake(asio::ssl::stream_base::client, kNoThrow);
      if (hec) {
        const long verify = SSL_get_verify_result(ssl);
        Close();
        if (verify != X509_V_OK) {
          co_return "TLS handshake with " + host + ":" + port +
              " failed: " + X509_verify_cert_error_string(verify) +
              " (a CA file, --ca-file, trusts a private CA)";
        }
        transient = true;
        co_return "TLS handshake with " + host + ":" + port + " failed: " + hec.message();
      }
    }
    buffer.clear();
    connected = true;
    co_return std::string();
  }

  template <typename Stream>
  asio::awaitable<boost::system::error_code> Send(Stream& stream,
                                                  http::request<http::string_body>& req,
                                                  http::response_parser<http::string_body>& parser) {
    auto [wec, written] = co_await http::async_write(stream, req, kNoThrow);
    if (wec) co_return wec;
    auto [rec, read] = co_await http::async_read(stream, buffer, parser, kNoThrow);
    co_return rec;
  }
};

HttpConnection::HttpConnection(asio::any_io_executor executor, std::string server,
                               std::string ca_file, std::chrono::milliseconds timeout)
    : impl_(std::make_unique<Impl>()) {
  impl_->executor = std::move(executor);
  impl_->timeout = timeout;
  if (server.rfind("https://", 0) == 0) {
    impl_->tls = true;
    server = server.substr(8);
  } else if (server.rfind("http://", 0) == 0) {
    server = server.substr(7);
  }
  while (!server.empty() && server.back() == '/') server.pop_back();
  const std::size_t colon = server.rfind(':');
  const bool has_port = colon != std::string::npos && server.find(']', colon) == std::string::npos;
  impl_->host = has_port ? server.substr(0, colon) : server;
  impl_->port = has_port ? server.substr(colon + 1) : (impl_->tls ? "443" : "80");
  if (impl_->host.size() >= 2 && impl_->host.front() == '[') {
    impl_->host = impl_->host.substr(1, impl_->host.size() - 2);
  }
  if (impl_->tls) {
    impl_->tls_context = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_client);
    impl_->tls_context->set_verify_mode(asio::ssl::verify_peer);
    boost::system::error_code ec;
    impl_->tls_context->set_default_verify_paths(ec);
    if (!ca_file.empty()) {
      impl_->tls_context->load_verify_file(ca_file, ec);
      if (ec) {
        impl_->setup_error = "CA file (--ca-file) " + ca_file +
                             ": cannot load CA certificates from it (" + ec.message() + ")";
      }
    }
  }
}

HttpConnection::~HttpConnection() = default;

asio::awaitable<Exchanged> HttpConnection::Exchange(std::string method, std::string target,
                                                    std::string body,
                                                    RequestHeaders headers) {
  Exchanged out;
  Response& result = out.response;
  for (int round = 0; round < 2; ++round) {
    const bool fresh = !impl_->connected;
    if (!impl_->connected) {
      result.error = co_await impl_->Connect(out.transient);
      if (!result.error.empty()) co_return out;
    }
    http::request<http::string_body> req;
    req.method_string(method);
    req.target(target);
    req.version(11);
    req.set(http::field::host, impl_->host + ":" + impl_->port);
    for (const auto& [name, value] : headers) req.insert(name, value);
    req.keep_alive(true);
    if (!body.empty()) {
      req.set(http::field::content_type, "application/json");
      req.body() = body;
    }
    req.prepare_payload();
    impl_->lowest().expires_after(impl_->timeout);
    http::response_parser<http::string_body> parser;
    parser.body_limit(256 * 1024 * 1024);
    boost::system::error_code ec;  // no co_await in a conditional (GCC 12)
    if (impl_->tls) {
      ec = co_await impl_->Send(*impl_->secure, req, parser);
    } else {
      ec = co_await impl_->Send(*impl_->plain, req, parser);
    }
    if (ec) {
      impl_->Close();
      result.error = "request failed: " + ec.message();
      out.transient = true;
      if (!fresh) continue;  // a stale keep-alive connection: once more
      co_return out;
    }
    auto res = parser.release();
    result.status = static_cast<int>(res.result_int());
    result.body = std::move(res.body());
    for (const auto& field : res) {
      std::string name(field.name_string());
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      result.headers[name] = std::string(field.value());
    }
    result.error.clear();
    out.transient = false;
    if (!res.keep_alive()) impl_->Close();
    co_return out;
  }
  co_return out;
}

}  // namespace tickwheel::client::internal
