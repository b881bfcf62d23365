// SPDX-License-Identifier: Apache-2.0
// Fuzzes the reading of HTTP requests as tickwheel serve does it
// (server/api/http_server.cc): Boost.Beast's request_parser<string_body>
// with the server's header limit (16 KiB) and a body limit, fed the input
// in pieces, request after request from one buffer as on a keep-alive
// connection; then the API's first steps on each request: the target split
// into path and query, the id of /v1/timers/{id}[:retry] validated, the
// list query parsed, a POST body parsed as JSON and as a timer.
//
// Input: byte 0 picks the body limit (0..255 * 64 bytes, or the server's 16
// MiB when 0), byte 1 the size of the pieces (1..255 bytes, 0: all at
// once); the rest is what a client sends.
//
// Oracle: no crash, no hang (every step consumes input or ends), and every
// request Beast accepts has a method, a target starting with '/' (or '*')
// without spaces or control characters, a header within 16 KiB, and a body
// within the limit that matches its Content-Length; every API error is
// well-formed (CheckError).
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "api/json_body.h"
#include "api/list_query.h"
#include "api/timer_request.h"
#include "decoder_checks.h"

namespace tickwheel::testing {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;

constexpr std::size_t kHeaderLimit = 16 * 1024;  // as HttpServer::Serve

void Require(bool ok, const std::string& what) {
  if (!ok) FuzzFail("HTTP request: " + what);
}

// What Api::Handle does first with a request (MatchRoute and the handlers
// in server/api/api.cc and timer_handlers.cc, which are coroutines).
void Route(const http::request<http::string_body>& req) {
  const std::string_view target = req.target();
  const std::size_t q = target.find('?');
  const std::string_view path = target.substr(0, q);
  const std::string_view query =
      q == std::string_view::npos ? std::string_view() : target.substr(q + 1);
  constexpr std::string_view kTimers = "/v1/timers";
  if (path == kTimers && req.method() == http::verb::get) {
    const auto parsed = server::ParseListQuery(query);
    if (!parsed.ok()) CheckError(parsed.status(), "list query");
  } else if (path.size() > kTimers.size() + 1 &&
             path.substr(0, kTimers.size() + 1) == "/v1/timers/") {
    std::string_view id = path.substr(kTimers.size() + 1);
    constexpr std::string_view kRetry = ":retry";
    if (id.size() > kRetry.size() && id.substr(id.size() - kRetry.size()) == kRetry) {
      id.remove_suffix(kRetry.size());
    }
    if (server::Status s = server::ValidateId(id, "id"); !s.ok()) CheckError(s, "path id");
  }
  if (req.method() == http::verb::post || req.method() == http::verb::patch) {
    const auto body = server::ParseJsonBody(req.body());
    if (!body.ok()) return CheckError(body.status(), "body");
    const auto spec = server::ParseTimerSpec(*body, server::ApiLimits{}, 1'700'000'000'000);
    if (!spec.ok()) CheckError(spec.status(), "timer");
  }
}

void CheckRequest(const http::request_parser<http::string_body>& parser,
                  std::size_t header_bytes, std::size_t body_limit) {
  const auto& req = parser.get();
  Require(!req.method_string().empty(), "no method; target \"" + std::string(req.target()) + "\" body \"" + req.body() + "\"");
  const std::string_view target = req.target();
  Require(!target.empty(), "no target");
  for (char c : target) {
    const auto u = static_cast<unsigned char>(c);
    Require(u > 0x20 && u != 0x7f, "a space or control character in the target");
  }
  Require(header_bytes <= kHeaderLimit,
          "a header of " + std::to_string(header_bytes) + " bytes accepted");
  Require(req.body().size() <= body_limit, "a body over the limit accepted");
  if (parser.content_length()) {
    Require(req.body().size() == *parser.content_length(),
            "body size differs from Content-Length");
  }
  Route(req);
}

void FuzzOne(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return;
  const std::size_t body_limit = data[0] == 0 ? 16 * 1024 * 1024 : data[0] * 64u;
  const std::size_t piece = data[1] == 0 ? size : data[1];
  const std::string_view input(reinterpret_cast<const char*>(data) + 2, size - 2);

  beast::flat_buffer buffer;
  std::size_t fed = 0;
  // One request after another, as HttpServer::Serve reads a connection.
  for (int request = 0; request < 64; ++request) {
    http::request_parser<http::string_body> parser;
    parser.body_limit(body_limit);
    parser.header_limit(kHeaderLimit);
    // Not eager until the header is done, so that a put stops there and
    // the header's size is known; then as the server reads (http::read).
    parser.eager(false);
    std::size_t header_bytes = 0;
    std::size_t used = 0;  // bytes this parser consumed
    boost::system::error_code ec;
    while (!parser.is_done()) {
      if (buffer.size() == 0 || ec == http::error::need_more) {
        if (fed == input.size()) {
          // The client closed. Between requests that is the end of the
          // connection; inside one, what a read sees at end of stream.
          if (used == 0 && buffer.size() == 0) return;
          parser.put_eof(ec);
          if (ec || !parser.is_done()) return;
          break;
        }
        const std::size_t n = std::min(piece, input.size() - fed);
        auto dst = buffer.prepare(n);
        std::memcpy(dst.data(), input.data() + fed, n);
        buffer.commit(n);
        fed += n;
      }
      const bool had_header = parser.is_header_done();
      const std::size_t n = parser.put(buffer.data(), ec);
      buffer.consume(n);
      used += n;
      if (!had_header && parser.is_header_done()) {
        header_bytes = used;
        parser.eager(true);
      }
      if (ec && ec != http::error::need_more) return;  // the server answers 400/413
      Require(n > 0 || ec == http::error::need_more || parser.is_done(),
              "the parser neither consumed input nor asked for more");
    }
    CheckRequest(parser, header_bytes, body_limit);
    if (!parser.get().keep_alive()) return;
  }
}

}  // namespace
}  // namespace tickwheel::testing

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  tickwheel::testing::FuzzOne(data, size);
  return 0;
}
