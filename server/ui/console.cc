// SPDX-License-Identifier: Apache-2.0
#include "ui/console.h"

#include "ui/ui_assets.h"

namespace tickwheel::server {

namespace http = boost::beast::http;

namespace {

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

HttpResponse Plain(http::status status, std::string body) {
  HttpResponse res{status, 11};
  res.set(http::field::content_type, "text/plain; charset=utf-8");
  res.body() = std::move(body);
  return res;
}

void SetSecurityHeaders(HttpResponse& res) {
  res.set("Content-Security-Policy", Console::kContentSecurityPolicy);
  res.set("X-Content-Type-Options", "nosniff");
  res.set("X-Frame-Options", "DENY");
  res.set("Referrer-Policy", "no-referrer");
  res.set("Cross-Origin-Opener-Policy", "same-origin");
  res.set("Cross-Origin-Resource-Policy", "same-origin");
}

}  // namespace

bool Console::Handles(std::string_view path) {
  return path == "/ui" || path.substr(0, 4) == "/ui/";
}

std::string_view Console::ContentType(std::string_view path) {
  if (EndsWith(path, ".html")) return "text/html; charset=utf-8";
  if (EndsWith(path, ".js")) return "text/javascript; charset=utf-8";
  if (EndsWith(path, ".css")) return "text/css; charset=utf-8";
  if (EndsWith(path, ".svg")) return "image/svg+xml";
  if (EndsWith(path, ".png")) return "image/png";
  if (EndsWith(path, ".json")) return "application/json";
  return "application/octet-stream";
}

HttpResponse Console::Serve(const HttpRequest& req) {
  const std::string_view target = req.target();
  const std::string_view path = target.substr(0, target.find('?'));
  HttpResponse res;
  if (req.method() != http::verb::get) {
    res = Plain(http::status::method_not_allowed, "the console's files are read with GET\n");
    res.set(http::field::allow, "GET");
  } else if (path == "/ui") {
    res = Plain(http::status::permanent_redirect, "/ui/\n");
    res.set(http::field::location, "/ui/");
  } else {
    std::string_view name = path.substr(4);  // after "/ui/"
    if (name.empty()) name = "index.html";
    const UiAsset* found = nullptr;
    for (const UiAsset& a : UiAssets()) {
      if (a.path == name) found = &a;
    }
    if (found == nullptr) {
      res = Plain(http::status::not_found, "no such file in the console\n");
    } else {
      if (req[http::field::if_none_match] == found->etag) {
        res = HttpResponse{http::status::not_modified, 11};
      } else {
        res = HttpResponse{http::status::ok, 11};
        res.set(http::field::content_type, ContentType(found->path));
        res.body() = std::string(found->bytes);
      }
      res.set(http::field::etag, found->etag);
      res.set(http::field::cache_control, "no-cache");
    }
  }
  if (res[http::field::cache_control].empty()) res.set(http::field::cache_control, "no-store");
  SetSecurityHeaders(res);
  return res;
}

}  // namespace tickwheel::server
