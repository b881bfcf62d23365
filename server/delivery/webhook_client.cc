// SPDX-License-Identifier: Apache-2.0
#include "delivery/webhook_client.h"

#include <sys/socket.h>

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <algorithm>
#include <cerrno>
#include <ctime>
#include <deque>
#include <future>
#include <list>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "delivery/retry_after.h"
#include "delivery/tls_client.h"

namespace tickwheel::server {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using SteadyTime = std::chrono::steady_clock::time_point;

namespace {

struct Job {
  WebhookRequest request;
  WebhookClient::Callback done;
};

// The share of a host's `limit` connections that shard `index` of `shards`
// may open (floor or ceiling of an even split).
std::size_t ShareOf(std::size_t limit, std::size_t shards, std::size_t index) {
  return limit / shards + (index < limit % shards ? 1 : 0);
}

// False if the receiver closed (or reset) a kept-alive connection while it
// was idle, or sent something unasked: it must not be reused.
bool StillOpen(tcp::socket& socket) {
  char byte;
  const ssize_t n = ::recv(socket.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

// One connection of a worker: plain or TLS, and the address it is to.
struct Connection {
  explicit Connection(std::atomic<std::size_t>& open_connections) : open_count(open_connections) {}
  ~Connection() { Reset(); }
  std::unique_ptr<beast::tcp_stream> plain;
  std::unique_ptr<beast::ssl_stream<beast::tcp_stream>> tls;
  tcp::endpoint peer;
  bool session_saved = false;  // its TLS session was kept for resumption
  bool counted = false;        // counted in open_count (connected)
  std::atomic<std::size_t>& open_count;

  beast::tcp_stream* lowest() { return tls ? &beast::get_lowest_layer(*tls) : plain.get(); }
  bool open() {
    beast::tcp_stream* t = lowest();
    return t != nullptr && t->socket().is_open();
  }
  void Connected() {
    if (!counted) open_count.fetch_add(1, std::memory_order_relaxed);
    counted = true;
  }
  void Reset() {
    if (beast::tcp_stream* t = lowest()) t->close();
    tls.reset();
    plain.reset();
    session_saved = false;
    if (counted) open_count.fetch_sub(1, std::memory_order_relaxed);
    counted = false;
  }
};

// Writes `req` and reads the answer into `parser` over `stream` (plain or
// TLS); returns the bytes written (some of the request may have been sent
// even if `ec` is set).
template <typename Stream>
asio::awaitable<std::size_t> Exchange(Stream& stream, beast::flat_buffer& buffer,
                                      http::request<http::string_body>& req,
                                      http::response_parser<http::string_body>& parser,
                                      boost::system::error_code& ec) {
  const std::size_t written =
      co_await http::async_write(stream, req, asio::redirect_error(asio::use_awaitable, ec));
  if (!ec) {
    co_await http::async_read(stream, buffer, parser,
                              asio::redirect_error(asio::use_awaitable, ec));
  }
  co_return written;
}

bool Contains(const DnsResolver::Endpoints& endpoints, const tcp::endpoint& e) {
  return std::find(endpoints.begin(), endpoints.end(), e) != endpoints.end();
}

struct SessionFree {
  void operator()(SSL_SESSION* s) const { SSL_SESSION_free(s); }
};

}  // namespace

struct WebhookClient::Shard {
  // A worker waiting for a job.
  struct Idler {
    asio::steady_timer* wake;
    bool has_slot;           // it holds a connection slot (ConnectionBudget)
    bool reclaimed = false;  // asked to close its connection and leave
  };
  struct Host {
    std::string key;  // "https://host:port"
    std::size_t limit = 1;
    std::deque<Job> queue;
    std::vector<Idler*> idle;  // workers waiting for a job
    std::size_t workers = 0;
  };
  // An attempt waiting for a connection slot.
  struct SlotWait {
    explicit SlotWait(asio::io_context& ioc) : timer(ioc, SteadyTime::max()) {}
    asio::steady_timer timer;
    bool granted = false;
  };
  // The last resumable TLS session with each https host (kept when the
  // host is forgotten): its next connection resumes it, an abbreviated
  // handshake. At most kMaxSessions hosts.
  static constexpr std::size_t kMaxSessions = 10'000;

  Shard(const WebhookClientOptions& o, std::size_t index, WebhookClient& c)
      : options(o), shard_index(index), client(c), resolver(c.resolver_),
        work(asio::make_work_guard(ioc)) {
    thread = std::thread([this] { ioc.run(); });
  }

  // The result of a lookup bounded by a deadline (see Resolve).
  struct Lookup {
    explicit Lookup(asio::io_context& ioc) : timer(ioc) {}
    asio::steady_timer timer;
    std::optional<Result<DnsResolver::Endpoints>> answer;
  };

  asio::awaitable<Result<DnsResolver::Endpoints>> Resolve(const HttpUrl& url,
                                                         SteadyTime deadline) {
    if (std::optional<Result<DnsResolver::Endpoints>> cached = resolver.Cached(url.host, url.port)) {
      co_return std::move(*cached);
    }
    auto lookup = std::make_shared<Lookup>(ioc);
    resolver.Resolve(url.host, url.port, [this, lookup](const Result<DnsResolver::Endpoints>& r) {
      asio::post(ioc, [lookup, r] {
        if (lookup->answer) return;
        lookup->answer = r;
        lookup->timer.cancel();
      });
    });
    lookups.insert(&lookup->timer);
    boost::system::error_code ec;
    // A new answer, waited for stale_grace; then, if the name server has
    // not answered, the last good answer (a name server that stops
    // answering does not stop deliveries to the names it answered before);
    // without one, the new answer until the deadline.
    lookup->timer.expires_at(std::min(deadline, std::chrono::steady_clock::now() +
                                                    options.dns.stale_grace));
    co_await lookup->timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (!lookup->answer && !stopping) {
      if (std::optional<DnsResolver::Endpoints> stale = resolver.Stale(url.host, url.port)) {
        lookups.erase(&lookup->timer);
        lookup->answer = std::move(*stale);  // (a late answer is ignored)
        co_return *lookup->answer;
      }
      if (std::chrono::steady_clock::now() < deadline) {
        lookup->timer.expires_at(deadline);
        co_await lookup->timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      }
    }
    lookups.erase(&lookup->timer);
    if (!lookup->answer) {
      resolver.RecordTimeout();
      lookup->answer = Status::Unavailable("name lookup of " + url.host + " timed out");
    }
    co_return *lookup->answer;
  }

  static std::string TimeoutMessage(std::chrono::milliseconds timeout) {
    return "timed out after " + std::to_string(timeout.count()) + " ms";
  }

  // Connects `conn` to one of `endpoints` (and for TLS, shakes hands);
  // empty on success, else what went wrong.
  asio::awaitable<std::string> Connect(Connection& conn, Host* host, const HttpUrl& url,
                                       const DnsResolver::Endpoints& endpoints,
                                       SteadyTime deadline) {
    boost::system::error_code ec;
    if (url.tls) {
      if (!options.tls) co_return "https:// targets need TLS, which this client was not given";
      conn.tls = std::make_unique<beast::ssl_stream<beast::tcp_stream>>(ioc, *options.tls);
    } else {
      conn.plain = std::make_unique<beast::tcp_stream>(ioc);
    }
    beast::tcp_stream& tcp_stream = *conn.lowest();
    tcp_stream.expires_at(deadline);
    conn.peer = co_await tcp_stream.async_connect(endpoints,
                                                  asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
      conn.Reset();
      co_return ec == beast::error::timeout
          ? "connecting to " + url.HostHeader() + " " + TimeoutMessage(options.timeout)
          : "cannot connect to " + url.HostHeader() + ": " + ec.message();
    }
    client.connects_.fetch_add(1, std::memory_order_relaxed);
    conn.Connected();
    tcp_stream.socket().set_option(tcp::no_delay(true), ec);
    if (!conn.tls) co_return "";
    SSL* ssl = conn.tls->native_handle();
    PrepareTlsConnection(ssl, url.host);
    if (auto it = sessions.find(host->key); it != sessions.end()) {
      SSL_set_session(ssl, it->second.get());
    }
    co_await conn.tls->async_handshake(asio::ssl::stream_base::client,
                                       asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
      std::string why = ec == beast::error::timeout
                            ? "TLS handshake with " + url.HostHeader() + " " +
                                  TimeoutMessage(options.timeout)
                            : DescribeTlsFailure(ec, ssl, url.host, url.HostHeader());
      if (SSL_get_verify_result(ssl) != X509_V_OK) sessions.erase(host->key);
      conn.Reset();
      co_return why;
    }
    client.handshakes_.fetch_add(1, std::memory_order_relaxed);
    if (SSL_session_reused(ssl)) client.resumed_.fetch_add(1, std::memory_order_relaxed);
    co_return "";
  }

  // One attempt of `request` over `conn` (reused if still open).
  asio::awaitable<AttemptResult> Attempt(Connection& conn, Host* host, beast::flat_buffer& buffer,
                                         const WebhookRequest& request) {
    AttemptResult result;
    const SteadyTime start = std::chrono::steady_clock::now();
    const SteadyTime deadline = start + options.timeout;
    const HttpUrl& url = request.url;
    boost::system::error_code ec;
    // Where the name points now, and whether that may be reached.
    Result<DnsResolver::Endpoints> endpoints = co_await Resolve(url, deadline);
    if (endpoints.ok()) {
      if (options.policy) {
        if (Status s = options.policy->Check(url.host, *endpoints); !s.ok()) {
          conn.Reset();
          result.error = "target denied: " + s.message();
          co_return result;
        }
      }
      if (conn.open() && !Contains(*endpoints, conn.peer)) conn.Reset();  // the name moved
    } else if (!conn.open()) {
      result.error = endpoints.status().message();
      co_return result;
    }
    if (conn.open() && !StillOpen(conn.lowest()->socket())) conn.Reset();
    if (!conn.open()) {
      buffer.clear();
      if (!endpoints.ok()) {  // the receiver closed it, and the name is unknown
        result.error = endpoints.status().message();
        co_return result;
      }
      std::string error = co_await Connect(conn, host, url, *endpoints, deadline);
      if (!error.empty()) {
        result.error = std::move(error);
        co_return result;
      }
    }
    http::request<http::string_body> req{http::verb::post, url.target, 11};
    req.set(http::field::host, url.HostHeader());
    req.set(http::field::content_type, "application/json");
    req.set(http::field::user_agent, "tickwheel");
    for (const auto& [name, value] : request.headers) req.set(name, value);
    if (options.signer && !request.message_id.empty()) {
      const std::int64_t now = options.unix_seconds ? options.unix_seconds()
                                                    : static_cast<std::int64_t>(std::time(nullptr));
      req.set("webhook-id", request.message_id);
      req.set("webhook-timestamp", std::to_string(now));
      req.set("webhook-signature", options.signer->Sign(request.message_id, now, request.body));
    }
    req.keep_alive(true);
    req.body() = request.body;
    req.prepare_payload();
    conn.lowest()->expires_at(deadline);
    http::response_parser<http::string_body> parser;
    parser.body_limit(64 * 1024);  // the answer is only looked at for its status
    std::size_t written = 0;
    if (conn.tls) {
      written = co_await Exchange(*conn.tls, buffer, req, parser, ec);
    } else {
      written = co_await Exchange(*conn.plain, buffer, req, parser, ec);
    }
    http::response<http::string_body> res;
    if (!ec || ec == http::error::body_limit) res = parser.release();
    if (ec == http::error::body_limit) ec = {};
    result.latency_ms = std::chrono::duration<double, std::milli>(
                            std::chrono::steady_clock::now() - start).count();
    if (ec) {
      conn.Reset();
      result.unanswered = written > 0;
      result.error = ec == beast::error::timeout ? TimeoutMessage(options.timeout)
                                                 : "connection error: " + ec.message();
      co_return result;
    }
    if (conn.tls && !conn.session_saved) {
      // After the first answer: a TLS 1.3 session ticket has arrived by now.
      // A copy: OpenSSL marks a connection's own session not resumable
      // when the connection is closed without a TLS shutdown.
      SSL_SESSION* current = SSL_get_session(conn.tls->native_handle());
      SSL_SESSION* session =
          current != nullptr && SSL_SESSION_is_resumable(current) ? SSL_SESSION_dup(current) : nullptr;
      if (session != nullptr) {
        if (sessions.size() >= kMaxSessions && !sessions.count(host->key)) sessions.clear();
        sessions[host->key].reset(session, SessionFree());
        conn.session_saved = true;
      }
    }
    result.status = static_cast<int>(res.result_int());
    if (result.status >= 200 && result.status < 300) {
      result.kind = AttemptResult::Kind::kDelivered;
    } else {
      result.error = "HTTP " + std::to_string(result.status);
      if (result.status == 429 || result.status == 503) {
        if (auto it = res.find(http::field::retry_after); it != res.end()) {
          result.retry_after_ms = RetryAfterMs(it->value(), std::time(nullptr));
        }
      }
    }
    if (!res.keep_alive()) conn.Reset();
    co_return result;
  }

  // A connection slot from the client's budget; false if the client
  // stopped while waiting.
  asio::awaitable<bool> TakeSlot() {
    auto wait = std::make_shared<SlotWait>(ioc);
    const bool now = client.budget_.Acquire([this, wait] {
      asio::post(ioc, [wait] {
        wait->granted = true;
        wait->timer.cancel();
      });
    });
    if (now) co_return true;
    slot_waits.insert(wait.get());
    boost::system::error_code ec;
    co_await wait->timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    slot_waits.erase(wait.get());
    if (wait->granted && stopping) client.budget_.Release();
    co_return wait->granted && !stopping;
  }

  asio::awaitable<void> Worker(Host* host) {
    Connection conn(client.open_);
    asio::steady_timer wake(ioc);
    beast::flat_buffer buffer;
    bool slot = false;  // a connection slot of the budget is this worker's
    connections.insert(&conn);
    for (;;) {
      bool leave = false;
      while (host->queue.empty() && !stopping && !leave) {
        // Attempts elsewhere wait for a slot: give this one up rather
        // than hold it idle.
        if (slot && client.budget_.waiting() > 0) {
          leave = true;
          break;
        }
        wake.expires_after(options.idle_timeout);
        Idler idler{&wake, slot};
        host->idle.push_back(&idler);
        auto in_line = idlers.insert(idlers.end(), &idler);
        boost::system::error_code ec;
        co_await wake.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        std::erase(host->idle, &idler);
        idlers.erase(in_line);
        // Not woken by a job: idle for idle_timeout, or reclaimed.
        leave = !ec || idler.reclaimed;
      }
      if (host->queue.empty() || stopping) break;
      Job job = std::move(host->queue.front());
      host->queue.pop_front();
      if (!slot) slot = co_await TakeSlot();
      if (!slot) {
        job.done(AttemptResult::Aborted("the server stopped before the attempt"));
        break;
      }
      AttemptResult result = co_await Attempt(conn, host, buffer, job.request);
      if (stopping && result.kind != AttemptResult::Kind::kDelivered) {
        result = AttemptResult::Aborted("the server stopped during the attempt");
      }
      job.done(std::move(result));
    }
    conn.Reset();
    if (slot) client.budget_.Release();
    connections.erase(&conn);
    if (--host->workers == 0) {
      if (host->queue.empty()) {
        hosts.erase(host->key);
      } else if (!stopping) {
        // Jobs came while this worker was leaving: one takes them.
        ++host->workers;
        asio::co_spawn(ioc, Worker(host), asio::detached);
      }
    }
  }

  // Has an idle worker holding a slot close its connection and leave (the
  // one idle longest), here or, failing that, on the next shards.
  void Reclaim(std::size_t hops) {
    for (Idler* idler : idlers) {
      if (idler->has_slot && !idler->reclaimed) {
        idler->reclaimed = true;
        idler->wake->cancel();
        return;
      }
    }
    if (hops + 1 < client.shards_.size()) {
      Shard* next = client.shards_[(shard_index + 1) % client.shards_.size()].get();
      asio::post(next->ioc, [next, hops] { next->Reclaim(hops + 1); });
    }
  }

  void Enqueue(Job job, std::size_t limit) {
    if (stopping) {
      job.done(AttemptResult::Aborted("the server is stopping"));
      return;
    }
    const HttpUrl& url = job.request.url;
    std::string key = (url.tls ? "https://" : "http://") + url.HostHeader();
    auto& slot = hosts[key];
    if (!slot) {
      slot = std::make_unique<Host>();
      slot->key = std::move(key);
    }
    Host* host = slot.get();
    host->limit = ShareOf(limit, options.threads, shard_index);
    host->queue.push_back(std::move(job));
    if (!host->idle.empty()) {
      host->idle.back()->wake->cancel();
      host->idle.pop_back();
    } else if (host->workers < host->limit) {
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
        job.done(AttemptResult::Aborted("the server stopped before the attempt"));
      }
      for (Idler* idler : host->idle) idler->wake->cancel();
      host->idle.clear();
    }
    for (asio::steady_timer* t : lookups) t->cancel();
    for (SlotWait* w : slot_waits) w->timer.cancel();
    // Closed, not just cancelled: an attempt between two operations (its
    // write done, its read not yet started) would miss a cancel and wait
    // for its timeout; on a closed socket the next operation fails at once.
    for (Connection* c : connections) {
      if (beast::tcp_stream* t = c->lowest()) t->close();
    }
  }

  const WebhookClientOptions& options;
  const std::size_t shard_index;
  WebhookClient& client;
  DnsResolver& resolver;
  asio::io_context ioc{1};
  asio::executor_work_guard<asio::io_context::executor_type> work;
  // Only the shard's thread touches these.
  std::unordered_map<std::string, std::unique_ptr<Host>> hosts;
  std::unordered_set<Connection*> connections;
  std::unordered_map<std::string, std::shared_ptr<SSL_SESSION>> sessions;
  std::unordered_set<asio::steady_timer*> lookups;
  std::unordered_set<SlotWait*> slot_waits;
  std::list<Idler*> idlers;  // every idle worker, the longest idle first
  bool stopping = false;
  std::thread thread;
};

WebhookClient::WebhookClient(WebhookClientOptions options)
    : options_([&] {
        options.threads = std::max(1u, options.threads);
        options.max_connections_per_host = std::max<std::size_t>(1, options.max_connections_per_host);
        return options;
      }()),
      resolver_(options_.dns),
      budget_(options_.max_connections) {
  for (unsigned i = 0; i < options_.threads; ++i) {
    shards_.push_back(std::make_unique<Shard>(options_, i, *this));
  }
  // A waiting attempt has an idle connection closed, on the shards in turn.
  budget_.SetReclaim([this] {
    Shard* shard = shards_[next_reclaim_.fetch_add(1, std::memory_order_relaxed) % shards_.size()].get();
    asio::post(shard->ioc, [shard] { shard->Reclaim(0); });
  });
}

WebhookClient::~WebhookClient() { Stop(); }

void WebhookClient::Post(WebhookRequest request, Callback done) {
  // Only the shards with a share of the host's connections take its requests.
  const std::size_t limit = options_.max_connections_per_host;
  const std::size_t sharing = std::min<std::size_t>(shards_.size(), limit);
  Shard* shard = shards_[next_.fetch_add(1, std::memory_order_relaxed) % sharing].get();
  asio::post(shard->ioc, [shard, limit, job = Job{std::move(request), std::move(done)}]() mutable {
    shard->Enqueue(std::move(job), limit);
  });
}

// Sums `count(shard)` over the shards, each counted on its own thread.
template <typename Count>
std::size_t SumOverShards(const std::vector<std::unique_ptr<WebhookClient::Shard>>& shards,
                          Count count) {
  std::size_t n = 0;
  for (const auto& shard : shards) {
    std::promise<std::size_t> result;
    asio::post(shard->ioc, [&] { result.set_value(count(*shard)); });
    n += result.get_future().get();
  }
  return n;
}

std::size_t WebhookClient::hosts() const {
  return SumOverShards(shards_, [](const Shard& s) { return s.hosts.size(); });
}

void WebhookClient::Stop() {
  for (auto& shard : shards_) {
    if (!shard->thread.joinable()) continue;
    asio::post(shard->ioc, [raw = shard.get()] { raw->StopAll(); });
    shard->work.reset();
  }
  for (auto& shard : shards_) {
    if (shard->thread.joinable()) shard->thread.join();
  }
  budget_.Clear();
  resolver_.Stop();
}

}  // namespace tickwheel::server
