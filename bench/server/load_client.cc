// SPDX-License-Identifier: Apache-2.0
#include "load_client.h"

#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace tickwheel::bench {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {
struct State {
  std::uint64_t next = 0;
  std::uint64_t total = 0;
  std::chrono::steady_clock::time_point end;
  LoadResult result;
};

asio::awaitable<void> Connection(tcp::endpoint at, State& state, const std::string& target,
                                 const std::function<std::string(std::uint64_t)>& body,
                                 int expected) {
  auto ex = co_await asio::this_coro::executor;
  beast::tcp_stream stream(ex);
  boost::system::error_code ec;
  co_await stream.async_connect(at, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) {
    ++state.result.failed;
    co_return;
  }
  stream.socket().set_option(tcp::no_delay(true));
  beast::flat_buffer buffer;
  const std::string host = at.address().to_string() + ":" + std::to_string(at.port());
  while (state.next < state.total && std::chrono::steady_clock::now() < state.end) {
    const std::uint64_t i = state.next++;
    http::request<http::string_body> req{http::verb::post, target, 11};
    req.set(http::field::host, host);
    req.set(http::field::content_type, "application/json");
    req.body() = body(i);
    req.prepare_payload();
    co_await http::async_write(stream, req, asio::redirect_error(asio::use_awaitable, ec));
    if (ec) break;
    http::response_parser<http::string_body> parser;
    parser.body_limit(64 << 20);
    co_await http::async_read(stream, buffer, parser, asio::redirect_error(asio::use_awaitable, ec));
    if (ec) break;
    if (static_cast<int>(parser.get().result_int()) == expected) {
      ++state.result.ok;
    } else {
      ++state.result.failed;
    }
  }
  if (ec) ++state.result.failed;
}
}  // namespace

LoadResult RunLoad(const std::string& host, int port, int connections, std::uint64_t total,
                   std::chrono::milliseconds duration, const std::string& target,
                   const std::function<std::string(std::uint64_t)>& body, int expected) {
  asio::io_context ioc(1);
  State state;
  state.total = total;
  const auto start = std::chrono::steady_clock::now();
  state.end = start + duration;
  tcp::endpoint at(asio::ip::make_address(host), static_cast<unsigned short>(port));
  for (int c = 0; c < connections; ++c) {
    asio::co_spawn(ioc, Connection(at, state, target, body, expected), asio::detached);
  }
  ioc.run();
  state.result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return state.result;
}

}  // namespace tickwheel::bench
