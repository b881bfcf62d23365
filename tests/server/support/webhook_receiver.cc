#include "support/webhook_receiver.h"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>

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
  asio::io_context ioc;
  tcp::acceptor acceptor{ioc};
  std::vector<std::thread> threads;
  mutable std::mutex mutex;
  std::condition_variable cv;
  std::vector<Delivery> deliveries;
  std::size_t count = 0;
  bool record = true;
  Policy policy;

  asio::awaitable<void> Serve(tcp::socket socket) {
    beast::tcp_stream stream(std::move(socket));
    beast::flat_buffer buffer;
    for (;;) {
      http::request<http::string_body> req;
      boost::system::error_code ec;
      co_await http::async_read(stream, buffer, req, asio::redirect_error(asio::use_awaitable, ec));
      if (ec) break;
      int status = 200;
      Policy p;
      {
        std::lock_guard lock(mutex);
        p = policy;
      }
      if (record || p) {
        Delivery d = Parse(req);
        if (p) status = p(d);  // may block: outside the lock
        std::lock_guard lock(mutex);
        if (record) deliveries.push_back(std::move(d));
        ++count;
      } else {
        std::lock_guard lock(mutex);
        ++count;
      }
      cv.notify_all();
      http::response<http::string_body> res{static_cast<http::status>(status), 11};
      res.keep_alive(req.keep_alive());
      res.prepare_payload();
      co_await http::async_write(stream, res, asio::redirect_error(asio::use_awaitable, ec));
      if (ec || !req.keep_alive()) break;
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
    : impl_(std::make_unique<Impl>()) {
  impl_->record = record;
  tcp::endpoint at(asio::ip::make_address("127.0.0.1"), 0);
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
