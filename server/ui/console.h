// SPDX-License-Identifier: Apache-2.0
// Console: the web console (docs/console.md) served at /ui/ when the server
// runs with --ui. It serves only the compiled-in files of ui_assets.h; the
// pages then call the /v1 API with the token the operator types in (kept in
// the tab's sessionStorage, sent as Authorization: Bearer), so nothing
// here needs a token, and no secret is in a file or a URL.
#ifndef TICKWHEEL_SERVER_UI_CONSOLE_H_
#define TICKWHEEL_SERVER_UI_CONSOLE_H_

#include <string_view>

#include "api/http_response.h"

namespace tickwheel::server {

// Every answer carries a strict Content-Security-Policy (scripts and styles
// from the server's own files only: no inline script, no eval, no other
// origin; the API is same-origin), nosniff, no referrer and no framing.
// Files are revalidated on each use (Cache-Control: no-cache with a strong
// ETag; If-None-Match answers 304), so an upgraded server never runs with a
// stale script. "/ui" redirects to "/ui/", which is index.html; unknown
// paths are 404; methods other than GET are 405.
//
// Thread safety: stateless; call from any thread.
//
//   if (Console::Handles(path)) co_return Console::Serve(req);
class Console {
 public:
  static constexpr std::string_view kContentSecurityPolicy =
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
      "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

  // "/ui" and everything under "/ui/" (the path, without the query).
  static bool Handles(std::string_view path);
  static HttpResponse Serve(const HttpRequest& req);
  // The Content-Type of an asset, by its extension.
  static std::string_view ContentType(std::string_view path);
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_UI_CONSOLE_H_
