// SPDX-License-Identifier: Apache-2.0
// The C++ client of `tickwheel serve`'s HTTP API (docs/openapi.json,
// docs/clients.md): timers (create one or a batch, get, list page by page
// or all of them, reschedule, cancel, retry), dead letters in bulk and the
// server's counts; Call() reaches every other route (schedules, flows, the
// operator's /v1/admin/ routes). Blocking (Client) or on Boost.Asio's C++20
// coroutines (AsyncClient); one HTTP/1.1 keep-alive connection, http:// or
// https:// (the certificate verified for the host, a private CA trusted
// from a CA file).
//
// Answers are the server's JSON objects as boost::json::object, field for
// field as docs/openapi.json describes them (a field the server adds is
// there without a new client). Errors are exceptions: tickwheel::client::
// Error and one subclass per kind of answer, carrying the server's status,
// error code, message and field.
//
// Creates always carry an id (made here, NewId(), when the caller gives
// none), so a create whose answer was lost, or that got a 503, is sent
// again safely: the server answers 200 for the same id and body. Every
// call is retried on a 503 or a lost connection, ClientOptions::retries
// times, after the server's Retry-After (or 0.5 s, doubling; at most 30 s).
//
// Link with tickwheel::client (find_package(tickwheel); needs Boost 1.81
// with Boost.JSON and OpenSSL).
//
//   tickwheel::client::Client c({.server = "https://timers.internal:8080",
//                                .ca_file = "/etc/tickwheel/ca.pem"});  // token: $TICKWHEEL_TOKEN
//   auto timer = c.Create({.target = {{"url", "https://hooks.example.com/t"}}, .delay_ms = 30000});
//   c.Cancel(timer.at("id").as_string());
#ifndef TICKWHEEL_CLIENT_H_
#define TICKWHEEL_CLIENT_H_

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tickwheel::client {

namespace json = boost::json;

// An error answer of the server, or no answer at all. status() is the HTTP
// status (0 when no answer came), code() the server's stable error code
// (docs/server.md, Errors: "negative_delay", "not_found", ...;
// "connection" when no answer came; "http_<status>" for an answer that is
// not the server's error JSON), field() the offending field or "".
class Error : public std::runtime_error {
 public:
  Error(int status, std::string code, std::string message, std::string field = {});
  int status() const { return status_; }
  const std::string& code() const { return code_; }
  const std::string& message() const { return message_; }
  const std::string& field() const { return field_; }

 private:
  int status_;
  std::string code_, message_, field_;
};
// 400: bad input, named by field(); nothing was stored.
struct BadRequestError : Error { using Error::Error; };
// 401: no token, or one the server does not know (TICKWHEEL_TOKEN).
struct UnauthorizedError : Error { using Error::Error; };
// 403: a read token asked for a write.
struct ForbiddenError : Error { using Error::Error; };
// 404: no such timer.
struct NotFoundError : Error { using Error::Error; };
// 409: id_conflict (the id exists with another body), not_pending, not_failed.
struct ConflictError : Error { using Error::Error; };
// 413: a payload, batch or body over the server's limits.
struct TooLargeError : Error { using Error::Error; };
// 503 (store_unavailable, overloaded, draining) still after the retries,
// or no answer (status 0, code "connection").
struct UnavailableError : Error { using Error::Error; };
// Any other status (500 store_corrupt, ...).
struct ServerError : Error { using Error::Error; };

// Throws the Error subclass for `status` (a non-2xx answer) with what its
// JSON `body` says ({"error": {"code", "message", "field"}}).
[[noreturn]] void ThrowForAnswer(int status, std::string_view body);

// Called before each retry with the attempt that failed (1, 2, ...) and why.
using RetryHook = std::function<void(int attempt, const Error& error)>;

struct ClientOptions {
  // http://host:port or https://host:port (host:port means http://; the
  // port defaults to 80 or 443); IPv6 hosts in brackets.
  std::string server = "http://127.0.0.1:8080";
  // Sent as "Authorization: Bearer TOKEN". nullopt: $TICKWHEEL_TOKEN if
  // set, else none; "": none.
  std::optional<std::string> token;
  // https://: PEM CA certificates trusted besides the system's.
  std::string ca_file;
  // Bounds each exchange (connect, TLS handshake, request and answer).
  std::chrono::milliseconds timeout{std::chrono::seconds(30)};
  // Retries of a 503 or a lost connection (0: none).
  int retries = 3;
  RetryHook on_retry;
};

// Headers a call sends besides Host, Authorization and Content-Type. A
// name may repeat: each is sent as given.
using RequestHeaders = std::multimap<std::string, std::string>;

// An answer as it came (Call()): status 0 and `error` when none came.
struct Response {
  int status = 0;
  std::string body;
  std::string error;
  std::map<std::string, std::string> headers;  // names in lower case
};

// POST /v1/timers. Exactly one of delay_ms and fire_at_ms.
struct CreateTimer {
  json::object target;  // {"url": ..., "headers": {...}} or {"nats": subject}
  std::optional<std::int64_t> delay_ms;
  std::optional<std::int64_t> fire_at_ms;
  std::string id;  // "": NewId()
  std::optional<json::value> payload;
  std::optional<json::object> retry;  // {"max_attempts", "backoff_ms"}
  std::string flow;                   // "": none (docs/flows.md)
  // W3C Trace Context, sent as headers of the create ("": none).
  std::string traceparent, tracestate;
};

// A timer listing's filters (GET /v1/timers).
struct ListOptions {
  std::optional<int> limit;  // per page, 1..1000 (server default 100)
  std::string after;         // a page's next_after: continue from there
  std::string prefix;        // only ids starting with this
  std::string host;          // only timers whose URL has this host
  bool show_headers = false;
};

// The dead letters a bulk action takes (POST /v1/timers:retry-failed and
// :delete-failed): those matching prefix/host, or every one with all
// (one of them is required).
struct DeadLetterFilter {
  std::string prefix, host;
  bool all = false;
  bool dry_run = false;
  std::optional<std::int64_t> failed_before_ms;
};

// An id as the server makes them: 128 random bits, 32 hex digits.
std::string NewId();

// AsyncClient: the API on Boost.Asio coroutines (co_await each call on
// the executor given).
//
// Thread safety: one call at a time (it owns one connection); make one
// client per concurrent task. Calls run on `executor`.
//
// With GCC 12, make a call's arguments before the co_await (a local
// CreateTimer, std::string id): it destroys some temporaries of a
// co_await expression twice (braced aggregates, conditionals).
//
//   tickwheel::client::AsyncClient c(co_await asio::this_coro::executor, {});
//   json::object t = co_await c.Get("order-42");
class AsyncClient {
 public:
  // Throws std::invalid_argument for a `server` that is not http(s)://host[:port]
  // or a CA file that cannot be loaded.
  AsyncClient(boost::asio::any_io_executor executor, ClientOptions options);
  ~AsyncClient();
  AsyncClient(const AsyncClient&) = delete;
  AsyncClient& operator=(const AsyncClient&) = delete;

  // The timer, durable. The same id and body again returns the existing
  // timer; the same id with another body throws ConflictError (id_conflict).
  boost::asio::awaitable<json::object> Create(CreateTimer timer);
  // Several timers, all or nothing (ids made for those without one): in
  // order each {id, state, fire_at_ms, created}.
  boost::asio::awaitable<json::array> CreateBatch(std::vector<CreateTimer> timers);
  // NotFoundError if there is none.
  boost::asio::awaitable<json::object> Get(std::string id, bool show_headers = false);
  // One page: {"timers": [...], "next_after": ...}.
  boost::asio::awaitable<json::object> ListPage(std::string state, ListOptions options = {});
  // Every timer in `state`, page after page (each of options.limit).
  boost::asio::awaitable<std::vector<json::object>> ListAll(std::string state,
                                                            ListOptions options = {});
  // Moves a pending timer (ConflictError not_pending otherwise); exactly
  // one of the two.
  boost::asio::awaitable<json::object> Reschedule(std::string id,
                                                  std::optional<std::int64_t> delay_ms,
                                                  std::optional<std::int64_t> fire_at_ms = {});
  // Cancels a pending timer (a cancelled one comes back unchanged).
  boost::asio::awaitable<json::object> Cancel(std::string id);
  // Re-arms a dead letter now (ConflictError not_failed otherwise).
  boost::asio::awaitable<json::object> Retry(std::string id);
  // At most 10,000 a call: {"done", "more", "dry_run", "failed_before_ms"}.
  boost::asio::awaitable<json::object> RetryFailed(DeadLetterFilter filter);
  boost::asio::awaitable<json::object> DeleteFailed(DeadLetterFilter filter);
  // RetryFailed / DeleteFailed until nothing more matches: how many.
  boost::asio::awaitable<std::int64_t> RetryAllFailed(DeadLetterFilter filter);
  boost::asio::awaitable<std::int64_t> DeleteAllFailed(DeadLetterFilter filter);
  boost::asio::awaitable<json::object> Stats();
  boost::asio::awaitable<json::object> Whoami();
  boost::asio::awaitable<json::object> Health();

  // Any route: `target` is the path and query ("/v1/schedules?limit=10"),
  // `body` JSON or empty. Retried as every call is; never throws for an
  // answer (status 0 and `error` when none came after the retries).
  boost::asio::awaitable<Response> Call(std::string method, std::string target,
                                        std::string body = {},
                                        RequestHeaders headers = {});
  // Call(), then the answer's JSON object, or the Error for a non-2xx.
  boost::asio::awaitable<json::value> CallJson(std::string method, std::string target,
                                               std::optional<json::value> body = {},
                                               RequestHeaders headers = {});

 private:
  boost::asio::awaitable<json::object> Object(std::string method, std::string target,
                                              std::optional<json::value> body = {},
                                              RequestHeaders headers = {});
  boost::asio::awaitable<std::int64_t> UntilDone(const char* route, DeadLetterFilter filter);

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Client: the same calls, blocking (each runs the AsyncClient's coroutine
// on a private io_context).
//
// Thread safety: may be shared by threads; one call at a time (a mutex).
//
//   tickwheel::client::Client c({.server = "http://127.0.0.1:8080"});
//   json::object t = c.Create({.target = {{"url", url}}, .delay_ms = 1000});
class Client {
 public:
  explicit Client(ClientOptions options = {});
  ~Client();

  json::object Create(CreateTimer timer);
  json::array CreateBatch(std::vector<CreateTimer> timers);
  json::object Get(std::string_view id, bool show_headers = false);
  json::object ListPage(std::string_view state, ListOptions options = {});
  std::vector<json::object> ListAll(std::string_view state, ListOptions options = {});
  json::object Reschedule(std::string_view id, std::optional<std::int64_t> delay_ms,
                          std::optional<std::int64_t> fire_at_ms = {});
  json::object Cancel(std::string_view id);
  json::object Retry(std::string_view id);
  json::object RetryFailed(DeadLetterFilter filter);
  json::object DeleteFailed(DeadLetterFilter filter);
  std::int64_t RetryAllFailed(DeadLetterFilter filter);
  std::int64_t DeleteAllFailed(DeadLetterFilter filter);
  json::object Stats();
  json::object Whoami();
  json::object Health();
  Response Call(std::string_view method, std::string_view target, std::string_view body = {},
                RequestHeaders headers = {});
  json::value CallJson(std::string_view method, std::string_view target,
                       std::optional<json::value> body = {},
                       RequestHeaders headers = {});

 private:
  template <typename T>
  T Run(boost::asio::awaitable<T> call);

  std::mutex mu_;
  boost::asio::io_context io_;
  AsyncClient async_;
};

}  // namespace tickwheel::client

#endif  // TICKWHEEL_CLIENT_H_
