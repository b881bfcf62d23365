// SPDX-License-Identifier: Apache-2.0
#include "api/http_server.h"

#include <spdlog/spdlog.h>

#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/ssl.hpp>
#include <optional>

namespace tickwheel::server {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

HttpResponse Overloaded(const std::string& what) {
  HttpResponse res = ErrorResponse(Status(StatusCode::kUnavailable, "overloaded", what));
  res.set(http::field::retry_after, "1");
  return res;
}

// Releases a reservation of request memory when it goes out of scope.
struct Reservation {
  std::atomic<std::size_t>* memory = nullptr;
  std::size_t bytes = 0;
  void Release() {
    if (memory) memory->fetch_sub(bytes);
    memory = nullptr;
  }
  ~Reservation() { Release(); }
};

}  // namespace

Result<std::shared_ptr<asio::ssl::context>> MakeTlsServerContext(const std::string& cert_file,
                                                                 const std::string& key_file) {
  if (cert_file.empty() != key_file.empty()) {
    return Status::Invalid("bad_flag", "--tls-cert and --tls-key go together: give both");
  }
  auto ctx = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_server);
  SSL_CTX_set_min_proto_version(ctx->native_handle(), TLS1_2_VERSION);
  ctx->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::single_dh_use);
  boost::system::error_code ec;
  ctx->use_certificate_chain_file(cert_file, ec);
  if (ec) {
    return Status::Invalid("bad_flag", "--tls-cert " + cert_file +
                                           ": cannot load a PEM certificate chain from it (" +
                                           ec.message() + ")");
  }
  ctx->use_private_key_file(key_file, asio::ssl::context::pem, ec);
  if (ec) {
    return Status::Invalid("bad_flag", "--tls-key " + key_file +
                                           ": cannot load a PEM private key from it (" +
                                           ec.message() + ")");
  }
  if (SSL_CTX_check_private_key(ctx->native_handle()) != 1) {
    return Status::Invalid("bad_flag", "--tls-key " + key_file +
                                           " is not the key of the certificate in --tls-cert");
  }
  return ctx;
}

HttpServer::HttpServer(std::vector<asio::io_context*> contexts, const std::vector<tcp::endpoint>& at,
                       HttpServerOptions options, HttpAdmit admit)
    : contexts_(std::move(contexts)), options_(std::move(options)), admit_(std::move(admit)) {
  state_->per_context = std::vector<std::atomic<std::size_t>>(contexts_.size());
  std::optional<boost::system::system_error> first_error;
  unsigned short port = at.empty() ? 0 : at.front().port();
  for (tcp::endpoint endpoint : at) {
    // Port 0: the port the first address got, so that all share one.
    if (endpoint.port() == 0) endpoint.port(port);
    auto acceptor = std::make_unique<tcp::acceptor>(*contexts_.front());
    try {
      acceptor->open(endpoint.protocol());
      acceptor->set_option(asio::socket_base::reuse_address(true));
      // "::" beside "0.0.0.0" (a name with both): each socket its family.
      if (endpoint.protocol() == tcp::v6()) acceptor->set_option(asio::ip::v6_only(true));
      acceptor->bind(endpoint);
      acceptor->listen(asio::socket_base::max_listen_connections);
    } catch (const boost::system::system_error& e) {
      // An address of a name that this host cannot bind (::1 without IPv6)
      // is skipped as long as another one is bound.
      if (!first_error) first_error = e;
      spdlog::warn("cannot listen on {}: {}", endpoint.address().to_string(), e.code().message());
      continue;
    }
    port = acceptor->local_endpoint().port();
    acceptors_.push_back(std::move(acceptor));
  }
  if (acceptors_.empty()) {
    if (first_error) throw *first_error;
    throw boost::system::system_error(asio::error::invalid_argument, "no address to listen on");
  }
}

unsigned short HttpServer::port() const { return acceptors_.front()->local_endpoint().port(); }

std::vector<tcp::endpoint> HttpServer::endpoints() const {
  std::vector<tcp::endpoint> out;
  for (const auto& a : acceptors_) out.push_back(a->local_endpoint());
  return out;
}

void HttpServer::Start() {
  for (auto& a : acceptors_) asio::co_spawn(strand_, Accept(*a), asio::detached);
}

void HttpServer::CloseAfterEachAnswer() { state_->closing.store(true); }

void HttpServer::StopAccepting() {
  state_->closing.store(true);
  // On the acceptors' strand: never concurrently with a pending accept.
  asio::post(strand_, [this] {
    boost::system::error_code ec;
    for (auto& a : acceptors_) a->close(ec);
  });
}

std::size_t HttpServer::LeastBusyContext() const {
  std::size_t best = 0;
  for (std::size_t i = 1; i < contexts_.size(); ++i) {
    if (state_->per_context[i].load() < state_->per_context[best].load()) best = i;
  }
  return best;
}

asio::awaitable<void> HttpServer::Accept(tcp::acceptor& acceptor) {
  asio::steady_timer pause(strand_);
  auto last_warning = std::chrono::steady_clock::time_point();
  auto last_client_warning = std::chrono::steady_clock::time_point();
  for (;;) {
    boost::system::error_code ec;
    const std::size_t context = LeastBusyContext();
    tcp::socket socket = co_await acceptor.async_accept(
        asio::make_strand(*contexts_[context]), asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
      if (!acceptor.is_open()) co_return;
      // Out of file descriptors (or another resource): pause rather than
      // spin; connections in progress free some.
      if (std::chrono::steady_clock::now() - last_warning > std::chrono::seconds(10)) {
        last_warning = std::chrono::steady_clock::now();
        spdlog::warn("cannot accept connections: {}; pausing", ec.message());
      }
      pause.expires_after(std::chrono::milliseconds(100));
      co_await pause.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      continue;
    }
    // The client: its address, an IPv4-mapped IPv6 one as IPv4.
    asio::ip::address peer = socket.remote_endpoint(ec).address();
    if (ec) continue;  // already gone
    if (peer.is_v6() && peer.to_v6().is_v4_mapped()) {
      peer = asio::ip::make_address_v4(asio::ip::v4_mapped, peer.to_v6());
    }
    std::string client = peer.to_string();
    bool admitted = false;
    std::size_t held = 0;
    {
      internal::MutexLock lock(state_->clients_mutex);
      std::size_t& n = state_->clients[client];
      held = n;
      if (n < options_.max_connections_per_client) {
        ++n;
        admitted = true;
      } else if (n == 0) {
        state_->clients.erase(client);
      }
    }
    if (!admitted) {
      state_->refused_per_client.fetch_add(1);
      state_->overloaded.fetch_add(1);
      socket.close(ec);
      if (std::chrono::steady_clock::now() - last_client_warning > std::chrono::seconds(10)) {
        last_client_warning = std::chrono::steady_clock::now();
        spdlog::warn("client {} holds {} connections, its limit (--max-connections-per-client); "
                     "closing its new ones",
                     client, held);
      }
      continue;
    }
    const std::size_t open = state_->connections.load();
    if (open >= options_.max_connections + kOverflowConnections) {
      state_->overloaded.fetch_add(1);
      socket.close(ec);
      internal::MutexLock lock(state_->clients_mutex);
      if (--state_->clients[client] == 0) state_->clients.erase(client);
      continue;
    }
    // Counted here, before the next accept picks a context.
    state_->per_context[context].fetch_add(1);
    auto executor = socket.get_executor();
    asio::co_spawn(executor,
                   Serve(std::move(socket), std::move(client), context,
                         open >= options_.max_connections),
                   asio::detached);
  }
}

namespace {

// After an answer given without reading the request's body: reads (and
// drops) what the client still sends, briefly, so that closing the socket
// does not reset the connection under an answer the client has not read.
template <typename Stream>
asio::awaitable<void> Linger(Stream& stream) {
  auto& lowest = beast::get_lowest_layer(stream);
  lowest.expires_after(std::chrono::seconds(1));
  char sink[4096];
  std::size_t total = 0;
  boost::system::error_code ec;
  while (!ec && total < 1024 * 1024) {
    total += co_await stream.async_read_some(asio::buffer(sink),
                                             asio::redirect_error(asio::use_awaitable, ec));
  }
}

}  // namespace

asio::awaitable<void> HttpServer::Serve(tcp::socket socket, std::string client,
                                        std::size_t context, bool overflow) {
  const std::shared_ptr<State> state = state_;
  state->connections.fetch_add(1);
  struct Count {
    std::shared_ptr<State> s;
    std::string client;
    std::size_t context;
    ~Count() {
      s->connections.fetch_sub(1);
      s->per_context[context].fetch_sub(1);
      internal::MutexLock lock(s->clients_mutex);
      auto it = s->clients.find(client);
      if (it != s->clients.end() && --it->second == 0) s->clients.erase(it);
    }
  } count{state, std::move(client), context};
  boost::system::error_code ec;
  socket.set_option(tcp::no_delay(true), ec);
  if (!options_.tls) {
    beast::tcp_stream stream(std::move(socket));
    const bool linger = co_await ServeRequests(stream, overflow);
    stream.socket().shutdown(tcp::socket::shutdown_send, ec);
    if (linger) co_await Linger(stream);
    co_return;
  }
  beast::ssl_stream<beast::tcp_stream> stream(std::move(socket), *options_.tls);
  beast::get_lowest_layer(stream).expires_after(options_.header_timeout);
  co_await stream.async_handshake(asio::ssl::stream_base::server,
                                  asio::redirect_error(asio::use_awaitable, ec));
  if (!ec) {
    const bool linger = co_await ServeRequests(stream, overflow);
    if (linger) co_await Linger(stream);
  }
  beast::get_lowest_layer(stream).socket().shutdown(tcp::socket::shutdown_send, ec);
}

Status HttpServer::ParseError(const boost::system::error_code& ec) const {
  if (ec == http::error::body_limit) {
    return Status::TooLarge("body_too_large", "the request body is over the server's limit of " +
                                                  std::to_string(options_.body_limit) + " bytes");
  }
  return Status::Invalid("bad_request", "cannot parse the HTTP request: " + ec.message());
}

template <typename Stream>
asio::awaitable<bool> HttpServer::ServeRequests(Stream& stream, bool overflow) {
  const std::shared_ptr<State> state = state_;
  boost::system::error_code ec;
  auto& lowest = beast::get_lowest_layer(stream);
  beast::flat_buffer buffer;
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.body_limit(options_.body_limit);
    parser.header_limit(static_cast<std::uint32_t>(options_.header_limit));
    if (buffer.size() == 0) {
      // An idle keep-alive connection waits up to idle_timeout for the
      // first byte of its next request; the headers then have
      // header_timeout, however slowly they come.
      lowest.expires_after(options_.idle_timeout);
      const std::size_t n = co_await stream.async_read_some(
          buffer.prepare(4096), asio::redirect_error(asio::use_awaitable, ec));
      if (ec) co_return false;
      buffer.commit(n);
    }
    lowest.expires_after(options_.header_timeout);
    co_await http::async_read_header(stream, buffer, parser,
                                     asio::redirect_error(asio::use_awaitable, ec));
    if (ec == http::error::end_of_stream || ec == beast::error::timeout ||
        ec == asio::ssl::error::stream_truncated || ec == asio::error::eof) {
      co_return false;
    }
    HttpResponse res;
    bool close = false;
    bool unread_body = false;
    if (ec) {
      // (A Content-Length over body_limit is found with the headers.)
      res = ErrorResponse(ParseError(ec));
      close = true;
      unread_body = ec == http::error::body_limit;
    } else {
      const HttpRequest& head = parser.get();
      const bool health = head.target() == options_.health_path;
      const bool has_body = parser.chunked() || (parser.content_length() && *parser.content_length() > 0);
      Admission admission;
      if (overflow && !health) {
        state->overloaded.fetch_add(1);
        admission.answer = Overloaded("the server has " + std::to_string(options_.max_connections) +
                                      " connections open, its limit; try again");
      } else {
        admission = admit_(head);
      }
      if (admission.answer) {
        res = std::move(*admission.answer);
        res.version(head.version());
        close = has_body || overflow || !head.keep_alive();
        unread_body = has_body;
      } else {
        // What the body will hold: its declared length, or the limit.
        const std::size_t body = parser.content_length()
                                     ? static_cast<std::size_t>(*parser.content_length())
                                     : (parser.chunked() ? options_.body_limit : 0);
        const std::size_t need = std::min(body, options_.body_limit) * kMemoryPerBodyByte;
        Reservation reserved;
        if (need > 0 && state->memory.fetch_add(need) + need > options_.max_request_memory) {
          state->memory.fetch_sub(need);
          state->overloaded.fetch_add(1);
          res = Overloaded("the server holds as many request bodies as it may; try again");
          close = true;
          unread_body = true;
        } else {
          reserved.memory = &state->memory;
          reserved.bytes = need;
          if (has_body && beast::iequals(head[http::field::expect], "100-continue")) {
            http::response<http::empty_body> go_on{http::status::continue_, head.version()};
            lowest.expires_after(options_.read_timeout);
            co_await http::async_write(stream, go_on, asio::redirect_error(asio::use_awaitable, ec));
            if (ec) co_return false;
          }
          lowest.expires_after(options_.read_timeout);
          co_await http::async_read(stream, buffer, parser,
                                    asio::redirect_error(asio::use_awaitable, ec));
          if (ec == http::error::end_of_stream || ec == beast::error::timeout ||
              ec == asio::ssl::error::stream_truncated || ec == asio::error::eof) {
            co_return false;
          }
          if (ec) {
            res = ErrorResponse(ParseError(ec));
            close = true;
            unread_body = ec == http::error::body_limit;
          } else {
            HttpRequest req = parser.release();
            res = co_await admission.handle(req);
            res.version(req.version());
            close = !req.keep_alive() || overflow;
          }
        }
        // The body is gone: its memory is free before the answer is sent.
        reserved.Release();
      }
    }
    res.keep_alive(!close && !state->closing.load());
    res.prepare_payload();
    lowest.expires_after(options_.read_timeout);
    co_await http::async_write(stream, res, asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return false;
    if (!res.keep_alive()) co_return unread_body;
  }
}

}  // namespace tickwheel::server
