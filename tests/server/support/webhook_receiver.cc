// SPDX-License-Identifier: Apache-2.0
#include "support/webhook_receiver.h"

#include <openssl/ssl.h>

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/json.hpp>
#include <stdexcept>

namespace tickwheel::testing {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
using tcp = asio::ip::tcp;

namespace {
std::int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Delivery Parse(const http::request<http::string_body>& req) {
  Delivery d;
  d.received_ms = NowMs();
  d.path = std::string(req.target());
  d.idempotency_key = std::string(req["Idempotency-Key"]);
  d.body = req.body();
  for (const auto& field : req) {
    std::string name(field.name_string());
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    d.headers[name] = std::string(field.value());
  }
  boost::system::error_code ec;
  json::value v = json::parse(req.body(), ec);
  if (!ec && v.is_object()) {
    const auto& o = v.as_object();
    if (auto* id = o.if_contains("id"); id && id->is_string()) d.id = std::string(id->as_string());
    if (auto* a = o.if_contains("attempt"); a && a->is_int64()) d.attempt = static_cast<int>(a->as_int64());
    if (auto* f = o.if_contains("fire_at_ms"); f && f->is_int64()) d.fire_at_ms = f->as_int64();
    if (auto* p = o.if_contains("payload")) d.payload = json::serialize(*p);
  }
  return d;
}
}  // namespace

struct WebhookReceiver::Impl {
  // Declared before the io_context: connections left when it is destroyed
  // still count themselves out under this mutex.
  mutable std::mutex mutex;
  std::condition_variable cv;
  std::vector<Delivery> deliveries;
  std::size_t count = 0;
  bool record = true;
  Policy policy;
  Responder responder;
  std::size_t open = 0;
  std::size_t max_open = 0;
  std::size_t busy = 0;      // requests read, not yet answered
  std::size_t max_busy = 0;
  std::size_t accepted = 0;
  std::size_t handshakes = 0;
  std::unique_ptr<asio::ssl::context> tls;
  asio::io_context ioc;
  tcp::acceptor acceptor{ioc};
  std::vector<std::thread> threads;

  asio::awaitable<void> Serve(tcp::socket socket) {
    {
      std::lock_guard lock(mutex);
      max_open = std::max(max_open, ++open);
      ++accepted;
    }
    struct Closed {
      Impl* impl;
      ~Closed() {
        std::lock_guard lock(impl->mutex);
        --impl->open;
      }
    } closed{this};
    if (!tls) {
      beast::tcp_stream stream(std::move(socket));
      co_await Exchanges(stream, "");
      co_return;
    }
    beast::ssl_stream<beast::tcp_stream> stream(std::move(socket), *tls);
    boost::system::error_code ec;
    beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(10));
    co_await stream.async_handshake(asio::ssl::stream_base::server,
                                    asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return;  // the client refused our certificate (or went away)
    beast::get_lowest_layer(stream).expires_never();
    const char* sni = SSL_get_servername(stream.native_handle(), TLSEXT_NAMETYPE_host_name);
    {
      std::lock_guard lock(mutex);
      ++handshakes;
    }
    co_await Exchanges(stream, sni ? sni : "");
  }

  template <typename Stream>
  asio::awaitable<void> Exchanges(Stream& stream, std::string sni) {
    auto& lowest = beast::get_lowest_layer(stream);
    beast::flat_buffer buffer;
    asio::steady_timer wait(stream.get_executor());
    for (;;) {
      http::request<http::string_body> req;
      boost::system::error_code ec;
      co_await http::async_read(stream, buffer, req, asio::redirect_error(asio::use_awaitable, ec));
      if (ec) break;
      {
        std::lock_guard lock(mutex);
        max_busy = std::max(max_busy, ++busy);
      }
      // Handled once its answer starts out (the client may have it before
      // this coroutine runs again), or once this iteration ends without one.
      struct Handled {
        Impl* impl;
        bool done = false;
        void Done() {
          if (done) return;
          done = true;
          std::lock_guard lock(impl->mutex);
          --impl->busy;
        }
        ~Handled() { Done(); }
      } handled{this};
      Reply reply;
      Policy p;
      Responder r;
      {
        std::lock_guard lock(mutex);
        p = policy;
        r = responder;
      }
      if (record || p || r) {
        Delivery d = Parse(req);
        d.sni = sni;
        if (r) {
          reply = r(d);
        } else if (p) {
          reply.status = p(d);  // may block: outside the lock
        }
        std::lock_guard lock(mutex);
        if (record) deliveries.push_back(std::move(d));
        ++count;
      } else {
        std::lock_guard lock(mutex);
        ++count;
      }
      cv.notify_all();
      if (reply.delay.count() > 0) {
        wait.expires_after(reply.delay);
        co_await wait.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      }
      if (reply.mode == Reply::Mode::kReset) {
        lowest.socket().set_option(asio::socket_base::linger(true, 0), ec);
        lowest.socket().close(ec);
        break;
      }
      if (reply.mode == Reply::Mode::kNeverAnswer) {
        // Silent until the client gives up: whatever else it sends is read
        // and ignored, and its close (or reset) closes this side too, so a
        // long run of unanswered attempts holds no descriptors here.
        char ignored[512];
        while (!ec) {
          co_await lowest.socket().async_read_some(asio::buffer(ignored),
                                                   asio::redirect_error(asio::use_awaitable, ec));
        }
        break;
      }
      if (reply.mode == Reply::Mode::kGarbage) {
        co_await asio::async_write(stream, asio::buffer(std::string_view("garbage\r\n\r\n")),
                                   asio::redirect_error(asio::use_awaitable, ec));
        break;
      }
      http::response<http::string_body> res{static_cast<http::status>(reply.status), 11};
      res.keep_alive(req.keep_alive());
      if (!reply.retry_after.empty()) res.set(http::field::retry_after, reply.retry_after);
      res.prepare_payload();
      handled.Done();
      co_await http::async_write(stream, res, asio::redirect_error(asio::use_awaitable, ec));
      if (ec || !req.keep_alive() || reply.mode == Reply::Mode::kCloseAfterAnswer) break;
    }
  }

  asio::awaitable<void> Accept() {
    for (;;) {
      boost::system::error_code ec;
      tcp::socket s = co_await acceptor.async_accept(asio::make_strand(ioc),
                                                     asio::redirect_error(asio::use_awaitable, ec));
      if (ec) co_return;
      auto ex = s.get_executor();
      asio::co_spawn(ex, Serve(std::move(s)), asio::detached);
    }
  }
};

WebhookReceiver::WebhookReceiver(unsigned threads, bool record)
    : WebhookReceiver(ReceiverOptions{threads, record}) {}

WebhookReceiver::WebhookReceiver(ReceiverOptions options) : impl_(std::make_unique<Impl>()) {
  const unsigned threads = options.threads;
  impl_->record = options.record;
  if (!options.tls_cert.empty()) {
    tls_ = true;
    impl_->tls = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_server);
    impl_->tls->use_certificate_chain_file(options.tls_cert);
    impl_->tls->use_private_key_file(options.tls_key, asio::ssl::context::pem);
  }
  tcp::endpoint at(asio::ip::make_address(options.address), 0);
  impl_->acceptor.open(at.protocol());
  impl_->acceptor.set_option(asio::socket_base::reuse_address(true));
  impl_->acceptor.bind(at);
  impl_->acceptor.listen(asio::socket_base::max_listen_connections);
  port_ = impl_->acceptor.local_endpoint().port();
  asio::co_spawn(impl_->ioc, impl_->Accept(), asio::detached);
  for (unsigned i = 0; i < threads; ++i) {
    impl_->threads.emplace_back([this] { impl_->ioc.run(); });
  }
}

WebhookReceiver::~WebhookReceiver() {
  impl_->ioc.stop();
  for (auto& t : impl_->threads) t.join();
}

void WebhookReceiver::SetPolicy(Policy policy) {
  std::lock_guard lock(impl_->mutex);
  impl_->policy = std::move(policy);
}

void WebhookReceiver::SetResponder(Responder responder) {
  std::lock_guard lock(impl_->mutex);
  impl_->responder = std::move(responder);
}

std::size_t WebhookReceiver::connections() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->open;
}

std::size_t WebhookReceiver::accepted() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->accepted;
}

std::size_t WebhookReceiver::handshakes() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->handshakes;
}

std::size_t WebhookReceiver::in_progress() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->busy;
}

std::size_t WebhookReceiver::max_in_progress() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->max_busy;
}

std::size_t WebhookReceiver::max_connections() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->max_open;
}

bool WebhookReceiver::WaitFor(std::size_t n, std::chrono::milliseconds patience) {
  std::unique_lock lock(impl_->mutex);
  return impl_->cv.wait_for(lock, patience, [&] { return impl_->count >= n; });
}

std::vector<Delivery> WebhookReceiver::deliveries() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->deliveries;
}

std::size_t WebhookReceiver::count() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->count;
}

}  // namespace tickwheel::testing
