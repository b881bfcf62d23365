// SPDX-License-Identifier: Apache-2.0
// RequestGuard: what keeps web pages from driving a tickwheel they can
// reach (a developer's `make run` on loopback, a server on a private
// network): the checks of a request's Host, Origin and Content-Type, made
// on its headers before anything else (docs/server.md, "Threat model").
#ifndef TICKWHEEL_SERVER_API_REQUEST_GUARD_H_
#define TICKWHEEL_SERVER_API_REQUEST_GUARD_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/http_response.h"
#include "common/status.h"

namespace tickwheel::server {

struct RequestGuardOptions {
  // Names clients reach the server by (--public-host), besides IP literals
  // and "localhost": "timers.internal", or "*.timers.internal" for its
  // subdomains.
  std::vector<std::string> public_hosts;
  // Web origins whose pages may call the API (--allow-origin), e.g.
  // "https://ops.example.com"; the console, served by the server itself, is
  // same-origin and needs none.
  std::vector<std::string> allow_origins;
};

// The rules, in the order they are checked:
//   1. Host must name the server: an IP literal (a page cannot make a
//      browser send one for a name it controls), "localhost", or a
//      --public-host name. Otherwise 421 "misdirected_request": a page
//      whose name was rebound to the server's address (DNS rebinding) is
//      refused. A request without Host (HTTP/1.0) passes; two are 400.
//   2. A request from a web page must come from the server's own origin or
//      one in --allow-origin: an Origin whose host[:port] is not the
//      request's Host and that is not listed is 403 "origin_not_allowed",
//      as is "Origin: null"; without Origin, a Sec-Fetch-Site of
//      "cross-site" or "same-site" is too (a browser's no-cors GET).
//   3. A request with a body must say Content-Type: application/json
//      (parameters allowed): 415 "unsupported_media_type" otherwise, so a
//      page's text/plain or form POST, which a browser sends to any origin
//      without asking, is never read as JSON.
//
// Thread safety: immutable after Make; use from any thread.
//
//   Result<RequestGuard> guard = RequestGuard::Make({.public_hosts = {"timers.internal"}});
//   if (Status s = guard->CheckHost(head); !s.ok()) return ErrorResponse(s);  // 421
class RequestGuard {
 public:
  // Bad entries are kInvalidArgument "bad_flag" naming the flag.
  static Result<RequestGuard> Make(RequestGuardOptions options);
  RequestGuard() = default;  // only IP literals and localhost; no other origin

  Status CheckHost(const HttpRequest& head) const;
  // Ok, with the origin when it is an allowed other one (its answers carry
  // CORS headers), nullopt when same-origin or not from a page.
  Result<std::optional<std::string>> CheckOrigin(const HttpRequest& head) const;
  // `has_body`: the request announced a body (Content-Length > 0, chunked).
  static Status CheckContentType(const HttpRequest& head, bool has_body);

  // A CORS preflight's answer (OPTIONS from an allowed origin): 204 with
  // the route's `methods` ("GET, PUT, DELETE": AllowedMethods of its
  // route; none for an unknown one) and the headers the API takes.
  static HttpResponse Preflight(const std::string& origin, std::string_view methods);
  // Marks `res` readable by the page at `origin` (an allowed one).
  static void AllowOrigin(HttpResponse& res, const std::string& origin);

  // "127.0.0.1:8080" -> "127.0.0.1", "[::1]:80" -> "::1", lower case and
  // without a trailing dot; "" if it does not parse.
  static std::string HostOf(std::string_view host_header);

 private:
  std::vector<std::string> public_hosts_;   // lower case
  std::vector<std::string> allow_origins_;  // lower case, no trailing slash
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_API_REQUEST_GUARD_H_
