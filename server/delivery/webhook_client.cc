#include "delivery/webhook_client.h"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <deque>
#include <unordered_map>
#include <vector>

namespace tickwheel::server {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {
struct Job {
  std::string target;
  std::string body;
  std::string key;
  WebhookClient::Callback done;
};
}  // namespace

struct WebhookClient::Impl {
  struct Host {
    std::string host;
    std::string port;
    std::deque<Job> queue;
    std::vector<asio::steady_timer*> idle;
    std::size_t workers = 0;
  };

  explicit Impl(WebhookClientOptions o)
      : options(o), work(asio::make_work_guard(ioc)) {
    thread = std::thread([this] { ioc.run(); });
  }

  asio::awaitable<void> Worker(Host* host) {
    beast::tcp_stream stream(ioc);
    asio::steady_timer wake(ioc);
    beast::flat_buffer buffer;
    tcp::resolver resolver(ioc);
    bool reused = false;
    for (;;) {
      while (host->queue.empty()) {
        if (stopping) co_return;
        wake.expires_at(asio::steady_timer::time_point::max());
        host->idle.push_back(&wake);
        boost::system::error_code ec;
        co_await wake.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      }
      Job job = std::move(host->queue.front());
      host->queue.pop_front();
      WebhookResult result;
      const auto start = std::chrono::steady_clock::now();
      for (int round = 0; round < 2; ++round) {
        boost::system::error_code ec;
        if (!stream.socket().is_open()) {
          reused = false;
          buffer.clear();
          auto endpoints = co_await resolver.async_resolve(
              host->host, host->port, asio::redirect_error(asio::use_awaitable, ec));
          if (ec) {
            result.error = "cannot resolve " + host->host + ": " + ec.message();
            break;
          }
          stream.expires_after(options.timeout);
          co_await stream.async_connect(endpoints,
                                        asio::redirect_error(asio::use_awaitable, ec));
          if (ec) {
            result.error = "cannot connect to " + host->host + ":" + host->port +
                           ": " + ec.message();
            stream.close();
            break;
          }
          stream.socket().set_option(tcp::no_delay(true), ec);
        }
        http::request<http::string_body> req{http::verb::post, job.target, 11};
        req.set(http::field::host, host->host + ":" + host->port);
        req.set(http::field::content_type, "application/json");
        req.set(http::field::user_agent, "tickwheel");
        req.set("Idempotency-Key", job.key);
        req.keep_alive(true);
        req.body() = job.body;
        req.prepare_payload();
        stream.expires_after(options.timeout);
        co_await http::async_write(stream, req,
                                   asio::redirect_error(asio::use_awaitable, ec));
        http::response<http::string_body> res;
        if (!ec) {
          co_await http::async_read(stream, buffer, res,
                                    asio::redirect_error(asio::use_awaitable, ec));
        }
        if (ec) {
          stream.close();
          const bool retry_fresh = reused && ec != beast::error::timeout;
          result.error = ec == beast::error::timeout
                             ? "timed out after " +
                                   std::to_string(options.timeout.count()) + " ms"
                             : "connection error: " + ec.message();
          if (retry_fresh) continue;  // the server closed an idle connection
          break;
        }
        result.status = static_cast<int>(res.result_int());
        result.ok = result.status >= 200 && result.status < 300;
        if (!result.ok) {
          result.error = "HTTP " + std::to_string(result.status);
        } else {
          result.error.clear();
        }
        if (!res.keep_alive()) {
          stream.close();
        } else {
          reused = true;
        }
        break;
      }
      result.latency_ms = std::chrono::duration<double, std::milli>(
                              std::chrono::steady_clock::now() - start)
                              .count();
      job.done(std::move(result));
    }
  }

  void Enqueue(const HttpUrl& url, Job job) {
    if (stopping) {
      job.done(WebhookResult{false, 0, "the server is shutting down", 0});
      return;
    }
    const std::string key = url.host + ":" + url.port;
    auto& slot = hosts[key];
    if (!slot) {
      slot = std::make_unique<Host>();
      slot->host = url.host;
      slot->port = url.port;
    }
    Host* host = slot.get();
    host->queue.push_back(std::move(job));
    if (!host->idle.empty()) {
      host->idle.back()->cancel();
      host->idle.pop_back();
    } else if (host->workers < options.max_connections_per_host) {
      ++host->workers;
      asio::co_spawn(ioc, Worker(host), asio::detached);
    }
  }

  void StopAll() {
    stopping = true;
    for (auto& [key, host] : hosts) {
      while (!host->queue.empty()) {
        Job job = std::move(host->queue.front());
        host->queue.pop_front();
        job.done(WebhookResult{false, 0, "the server is shutting down", 0});
      }
      for (auto* t : host->idle) t->cancel();
      host->idle.clear();
    }
  }

  WebhookClientOptions options;
  asio::io_context ioc{1};
  asio::executor_work_guard<asio::io_context::executor_type> work;
  std::unordered_map<std::string, std::unique_ptr<Host>> hosts;
  bool stopping = false;
  std::thread thread;
};

WebhookClient::WebhookClient(WebhookClientOptions options)
    : impl_(std::make_unique<Impl>(options)) {}

WebhookClient::~WebhookClient() { Stop(); }

void WebhookClient::Post(const HttpUrl& url, std::string body,
                         std::string idempotency_key, Callback done) {
  asio::post(impl_->ioc, [impl = impl_.get(), url,
                          job = Job{url.target, std::move(body),
                                    std::move(idempotency_key),
                                    std::move(done)}]() mutable {
    impl->Enqueue(url, std::move(job));
  });
}

void WebhookClient::Defer(std::function<void()> fn) {
  asio::post(impl_->ioc, std::move(fn));
}

void WebhookClient::Stop() {
  if (!impl_ || !impl_->thread.joinable()) return;
  asio::post(impl_->ioc, [impl = impl_.get()] { impl->StopAll(); });
  impl_->work.reset();
  // Workers in a request finish it (bounded by the timeout), then exit.
  impl_->thread.join();
}

}  // namespace tickwheel::server
