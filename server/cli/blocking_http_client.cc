// SPDX-License-Identifier: Apache-2.0
#include "cli/blocking_http_client.h"

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <atomic>
#include <boost/asio.hpp>
#include <cctype>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

namespace tickwheel::server {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {
std::atomic<HttpExchangeObserver> exchange_observer{nullptr};
}  // namespace

void SetHttpExchangeObserver(HttpExchangeObserver observer) { exchange_observer.store(observer); }

struct BlockingHttpClient::Impl {
  std::string host;
  std::string port;
  bool tls = false;
  BlockingHttpClientOptions options;
  asio::io_context ioc;
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

  bool Connect(std::string& error) {
    if (!setup_error.empty()) {
      error = setup_error;
      return false;
    }
    boost::system::error_code ec;
    tcp::resolver resolver(ioc);
    auto endpoints = resolver.resolve(host, port, ec);
    if (ec) {
      error = "cannot resolve " + host + ": " + ec.message();
      return false;
    }
    if (tls) {
      secure = std::make_unique<beast::ssl_stream<beast::tcp_stream>>(ioc, *tls_context);
    } else {
      plain = std::make_unique<beast::tcp_stream>(ioc);
    }
    lowest().expires_after(options.timeout);
    lowest().connect(endpoints, ec);
    if (ec) {
      error = "cannot connect to " + host + ":" + port + ": " + ec.message() +
              " (is `tickwheel serve` running there?)";
      return false;
    }
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
      ec = {};
      secure->handshake(asio::ssl::stream_base::client, ec);
      if (ec) {
        const long verify = SSL_get_verify_result(ssl);
        error = "TLS handshake with " + host + ":" + port + " failed: " +
                (verify != X509_V_OK ? std::string(X509_verify_cert_error_string(verify)) +
                                           " (--ca-file trusts a private CA)"
                                     : ec.message());
        Close();
        return false;
      }
    }
    buffer.clear();
    connected = true;
    return true;
  }

  template <typename Stream>
  void Exchange(Stream& stream, http::request<http::string_body>& req,
                http::response_parser<http::string_body>& parser, boost::system::error_code& ec) {
    http::write(stream, req, ec);
    if (!ec) http::read(stream, buffer, parser, ec);
  }
};

BlockingHttpClient::BlockingHttpClient(std::string server, std::chrono::milliseconds timeout)
    : BlockingHttpClient(std::move(server), BlockingHttpClientOptions{timeout}) {}

BlockingHttpClient::BlockingHttpClient(std::string server, BlockingHttpClientOptions options)
    : impl_(std::make_unique<Impl>()) {
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
  impl_->options = std::move(options);
  if (impl_->tls) {
    impl_->tls_context = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_client);
    impl_->tls_context->set_verify_mode(asio::ssl::verify_peer);
    boost::system::error_code ec;
    impl_->tls_context->set_default_verify_paths(ec);
    if (!impl_->options.ca_file.empty()) {
      impl_->tls_context->load_verify_file(impl_->options.ca_file, ec);
      if (ec) {
        impl_->setup_error = "--ca-file " + impl_->options.ca_file +
                             ": cannot load CA certificates from it (" + ec.message() + ")";
      }
    }
  }
}

BlockingHttpClient::~BlockingHttpClient() = default;

HttpCallResult BlockingHttpClient::Call(std::string_view method,
                                        std::string_view target,
                                        std::string_view body,
                                        const std::vector<std::pair<std::string, std::string>>& headers) {
  HttpCallResult result;
  for (int round = 0; round < 2; ++round) {
    const bool fresh = !impl_->connected;
    if (!impl_->connected && !impl_->Connect(result.error)) return result;
    http::request<http::string_body> req;
    req.method_string(method);
    req.target(target);
    req.version(11);
    req.set(http::field::host, impl_->host + ":" + impl_->port);
    if (!impl_->options.bearer_token.empty()) {
      req.set(http::field::authorization, "Bearer " + impl_->options.bearer_token);
    }
    for (const auto& [name, value] : headers) req.insert(name, value);
    req.keep_alive(true);
    if (!body.empty()) {
      req.set(http::field::content_type, "application/json");
      req.body() = std::string(body);
    }
    req.prepare_payload();
    boost::system::error_code ec;
    impl_->lowest().expires_after(impl_->options.timeout);
    http::response_parser<http::string_body> parser;
    parser.body_limit(256 * 1024 * 1024);
    if (impl_->tls) {
      impl_->Exchange(*impl_->secure, req, parser, ec);
    } else {
      impl_->Exchange(*impl_->plain, req, parser, ec);
    }
    if (ec) {
      impl_->Close();
      result.error = "request failed: " + ec.message();
      if (!fresh) continue;  // a stale keep-alive connection: once more
      return result;
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
    if (!res.keep_alive()) impl_->Close();
    if (HttpExchangeObserver observe = exchange_observer.load()) {
      observe({method, target, body, !impl_->options.bearer_token.empty(), result, headers});
    }
    return result;
  }
  return result;
}

}  // namespace tickwheel::server
