// SPDX-License-Identifier: Apache-2.0
#include <openssl/rand.h>

#include <algorithm>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <cctype>
#include <cstdlib>

#include "client/http_connection.h"
#include "client/percent_encode.h"
#include "tickwheel/client.h"

namespace tickwheel::client {

namespace asio = boost::asio;

namespace {

using internal::PercentEncode;

std::string TimerPath(std::string_view id) { return "/v1/timers/" + PercentEncode(id); }

// The server's Retry-After in seconds, if it sent a number.
std::optional<std::chrono::milliseconds> RetryAfter(const Response& r) {
  auto it = r.headers.find("retry-after");
  if (it == r.headers.end() || it->second.empty() ||
      !std::all_of(it->second.begin(), it->second.end(),
                   [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
    return std::nullopt;
  }
  return std::chrono::seconds(std::min(std::atol(it->second.c_str()), 30L));
}

json::object CreateBody(CreateTimer& t) {
  json::object body;
  body["id"] = t.id.empty() ? NewId() : t.id;
  body["target"] = std::move(t.target);
  if (t.delay_ms) body["delay_ms"] = *t.delay_ms;
  if (t.fire_at_ms) body["fire_at_ms"] = *t.fire_at_ms;
  if (t.payload) body["payload"] = std::move(*t.payload);
  if (t.retry) body["retry"] = std::move(*t.retry);
  if (!t.flow.empty()) body["flow"] = t.flow;
  return body;
}

RequestHeaders TraceHeaders(const CreateTimer& t) {
  RequestHeaders headers;
  if (!t.traceparent.empty()) {
    headers.emplace("traceparent", t.traceparent);
    if (!t.tracestate.empty()) headers.emplace("tracestate", t.tracestate);
  }
  return headers;
}

json::value FilterBody(const DeadLetterFilter& f) {
  json::object body;
  if (!f.prefix.empty()) body["prefix"] = f.prefix;
  if (!f.host.empty()) body["host"] = f.host;
  if (f.all) body["all"] = true;
  if (f.dry_run) body["dry_run"] = true;
  if (f.failed_before_ms) body["failed_before_ms"] = *f.failed_before_ms;
  return body;
}

}  // namespace

std::string NewId() {
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof bytes) != 1) throw std::runtime_error("RAND_bytes failed");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id;
  for (unsigned char b : bytes) {
    id += kHex[b >> 4];
    id += kHex[b & 15];
  }
  return id;
}

struct AsyncClient::Impl {
  ClientOptions options;
  std::string token;
  asio::any_io_executor executor;
  internal::HttpConnection connection;

  Impl(asio::any_io_executor ex, ClientOptions o)
      : options(std::move(o)),
        executor(ex),
        connection(ex, options.server, options.ca_file, options.timeout) {
    if (options.token) {
      token = *options.token;
    } else if (const char* env = std::getenv("TICKWHEEL_TOKEN")) {
      token = env;
    }
  }
};

AsyncClient::AsyncClient(asio::any_io_executor executor, ClientOptions options) {
  const std::string& s = options.server;
  const std::size_t scheme = s.find("://");
  if (scheme != std::string::npos && s.compare(0, scheme, "http") != 0 &&
      s.compare(0, scheme, "https") != 0) {
    throw std::invalid_argument("server \"" + s +
                                "\": expected http://host:port or https://host:port");
  }
  if (s.empty() || s.size() == scheme + 3) {
    throw std::invalid_argument("server \"" + s + "\": no host in it");
  }
  impl_ = std::make_unique<Impl>(std::move(executor), std::move(options));
}

AsyncClient::~AsyncClient() = default;

asio::awaitable<Response> AsyncClient::Call(std::string method, std::string target,
                                            std::string body,
                                            RequestHeaders headers) {
  // The caller's own accept and user-agent win; the token replaces any
  // authorization given.
  if (!headers.contains("accept")) headers.emplace("accept", "application/json");
  if (!headers.contains("user-agent")) {
    headers.emplace("user-agent", "tickwheel-cpp/" TICKWHEEL_CLIENT_VERSION);
  }
  if (!impl_->token.empty()) {
    headers.erase("authorization");
    headers.emplace("authorization", "Bearer " + impl_->token);
  }
  std::chrono::milliseconds backoff(500);
  for (int attempt = 1;; ++attempt) {
    internal::Exchanged x = co_await impl_->connection.Exchange(method, target, body, headers);
    const bool again = x.response.status == 503 || (x.response.status == 0 && x.transient);
    if (!again || attempt > impl_->options.retries) co_return std::move(x.response);
    if (impl_->options.on_retry) {
      const Response& r = x.response;
      if (r.status == 0) {
        impl_->options.on_retry(attempt, UnavailableError(0, "connection", r.error));
      } else {
        try {
          ThrowForAnswer(r.status, r.body);
        } catch (const Error& e) {
          impl_->options.on_retry(attempt, e);
        }
      }
    }
    const std::chrono::milliseconds wait =
        std::min<std::chrono::milliseconds>(RetryAfter(x.response).value_or(backoff),
                                            std::chrono::seconds(30));
    backoff *= 2;
    asio::steady_timer timer(impl_->executor, wait);
    co_await timer.async_wait(asio::use_awaitable);
  }
}

asio::awaitable<json::value> AsyncClient::CallJson(std::string method, std::string target,
                                                   std::optional<json::value> body,
                                                   RequestHeaders headers) {
  // Arguments of a co_await made beforehand: GCC 12 destroys some
  // temporaries of a co_await expression twice (a conditional's).
  std::string text;
  if (body) text = json::serialize(*body);
  Response r = co_await Call(std::move(method), std::move(target), std::move(text),
                             std::move(headers));
  if (r.status == 0) throw UnavailableError(0, "connection", r.error);
  if (r.status < 200 || r.status >= 300) ThrowForAnswer(r.status, r.body);
  if (r.body.empty()) co_return json::value();
  boost::system::error_code ec;
  json::value v = json::parse(r.body, ec);
  if (ec) throw ServerError(r.status, "bad_answer", "the answer is not JSON: " + ec.message());
  co_return v;
}

asio::awaitable<json::object> AsyncClient::Object(std::string method, std::string target,
                                                  std::optional<json::value> body,
                                                  RequestHeaders headers) {
  json::value v = co_await CallJson(std::move(method), std::move(target), std::move(body),
                                    std::move(headers));
  if (!v.is_object()) {
    throw ServerError(200, "bad_answer", "the answer is not a JSON object: " + json::serialize(v));
  }
  co_return std::move(v.as_object());
}

asio::awaitable<json::object> AsyncClient::Create(CreateTimer timer) {
  RequestHeaders headers = TraceHeaders(timer);
  json::value body = CreateBody(timer);
  co_return co_await Object("POST", "/v1/timers", std::move(body), std::move(headers));
}

asio::awaitable<json::array> AsyncClient::CreateBatch(std::vector<CreateTimer> timers) {
  RequestHeaders headers;
  if (!timers.empty()) headers = TraceHeaders(timers.front());
  json::array list;
  for (CreateTimer& t : timers) list.push_back(CreateBody(t));
  // Built before the co_await: GCC 12 cannot keep an initializer list's
  // array across one ("array used as initializer").
  json::object body;
  body["timers"] = std::move(list);
  json::value request = std::move(body);
  json::object answer =
      co_await Object("POST", "/v1/timers:batch", std::move(request), std::move(headers));
  json::value created = std::move(answer.at("timers"));
  co_return json::array(std::move(created.as_array()));
}

asio::awaitable<json::object> AsyncClient::Get(std::string id, bool show_headers) {
  std::string target = TimerPath(id);
  if (show_headers) target += "?show_headers=true";
  co_return co_await Object("GET", std::move(target));
}

asio::awaitable<json::object> AsyncClient::ListPage(std::string state, ListOptions o) {
  std::string target = "/v1/timers?state=" + PercentEncode(state);
  if (o.limit) target += "&limit=" + std::to_string(*o.limit);
  if (!o.after.empty()) target += "&after=" + PercentEncode(o.after);
  if (!o.prefix.empty()) target += "&prefix=" + PercentEncode(o.prefix);
  if (!o.host.empty()) target += "&host=" + PercentEncode(o.host);
  if (o.show_headers) target += "&show_headers=true";
  co_return co_await Object("GET", std::move(target));
}

asio::awaitable<std::vector<json::object>> AsyncClient::ListAll(std::string state,
                                                                ListOptions options) {
  std::vector<json::object> all;
  for (;;) {
    json::object page = co_await ListPage(state, options);
    for (json::value& t : page.at("timers").as_array()) all.push_back(std::move(t.as_object()));
    const json::value* next = page.if_contains("next_after");
    if (next == nullptr || !next->is_string()) co_return all;
    options.after = std::string(next->as_string());
  }
}

asio::awaitable<json::object> AsyncClient::Reschedule(std::string id,
                                                      std::optional<std::int64_t> delay_ms,
                                                      std::optional<std::int64_t> fire_at_ms) {
  json::object body;
  if (delay_ms) body["delay_ms"] = *delay_ms;
  if (fire_at_ms) body["fire_at_ms"] = *fire_at_ms;
  json::value request = std::move(body);
  std::string target = TimerPath(id);
  co_return co_await Object("PATCH", std::move(target), std::move(request));
}

asio::awaitable<json::object> AsyncClient::Cancel(std::string id) {
  std::string target = TimerPath(id);
  co_return co_await Object("DELETE", std::move(target));
}

asio::awaitable<json::object> AsyncClient::Retry(std::string id) {
  std::string target = TimerPath(id) + ":retry";
  co_return co_await Object("POST", std::move(target));
}

asio::awaitable<json::object> AsyncClient::RetryFailed(DeadLetterFilter filter) {
  json::value body = FilterBody(filter);
  co_return co_await Object("POST", "/v1/timers:retry-failed", std::move(body));
}

asio::awaitable<json::object> AsyncClient::DeleteFailed(DeadLetterFilter filter) {
  json::value body = FilterBody(filter);
  co_return co_await Object("POST", "/v1/timers:delete-failed", std::move(body));
}

asio::awaitable<std::int64_t> AsyncClient::UntilDone(const char* route, DeadLetterFilter filter) {
  std::int64_t total = 0;
  for (;;) {
    json::value body = FilterBody(filter);
    json::object outcome = co_await Object("POST", route, std::move(body));
    total += outcome.at("done").to_number<std::int64_t>();
    const json::value* more = outcome.if_contains("more");
    const json::value* dry = outcome.if_contains("dry_run");
    const json::value* before = outcome.if_contains("failed_before_ms");
    if (!more || !more->is_bool() || !more->as_bool() || (dry && dry->is_bool() && dry->as_bool()) ||
        !before || !before->is_number()) {
      co_return total;
    }
    filter.failed_before_ms = before->to_number<std::int64_t>();
  }
}

asio::awaitable<std::int64_t> AsyncClient::RetryAllFailed(DeadLetterFilter filter) {
  co_return co_await UntilDone("/v1/timers:retry-failed", std::move(filter));
}

asio::awaitable<std::int64_t> AsyncClient::DeleteAllFailed(DeadLetterFilter filter) {
  co_return co_await UntilDone("/v1/timers:delete-failed", std::move(filter));
}

asio::awaitable<json::object> AsyncClient::Stats() { co_return co_await Object("GET", "/v1/stats"); }

asio::awaitable<json::object> AsyncClient::Whoami() {
  co_return co_await Object("GET", "/v1/whoami");
}

asio::awaitable<json::object> AsyncClient::Health() { co_return co_await Object("GET", "/healthz"); }

}  // namespace tickwheel::client
