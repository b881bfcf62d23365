// SPDX-License-Identifier: Apache-2.0
#include "api/request_guard.h"

#include <algorithm>
#include <boost/asio/ip/address.hpp>
#include <cctype>

#include "common/ascii_case.h"
#include "common/host_pattern.h"

namespace tickwheel::server {

namespace http = boost::beast::http;

namespace {

bool IsIpLiteral(const std::string& host) {
  boost::system::error_code ec;
  (void)boost::asio::ip::make_address(host, ec);
  return !ec;
}

bool ValidName(std::string_view name) {
  if (name.rfind("*.", 0) == 0) name.remove_prefix(2);
  return !name.empty() && name.size() <= 253 &&
         std::all_of(name.begin(), name.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_';
         });
}

// "https://host[:port]" with nothing after it.
bool ValidOrigin(std::string_view origin) {
  const std::size_t scheme = origin.find("://");
  if (scheme == std::string_view::npos) return false;
  const std::string_view name = origin.substr(0, scheme);
  const std::string_view authority = origin.substr(scheme + 3);
  return (name == "http" || name == "https") && !authority.empty() &&
         authority.find_first_of("/?#@ ") == std::string_view::npos;
}

std::string QuotedExcerpt(std::string_view s) {
  std::string out = "\"";
  for (char c : s.substr(0, 200)) {
    out += std::isprint(static_cast<unsigned char>(c)) ? c : '?';
  }
  return out + "\"";
}

}  // namespace

Result<RequestGuard> RequestGuard::Make(RequestGuardOptions options) {
  RequestGuard guard;
  for (const std::string& host : options.public_hosts) {
    std::string name = AsciiLower(host);
    if (!name.empty() && name.back() == '.') name.pop_back();
    if (!ValidName(name)) {
      return Status::Invalid("bad_flag", "--public-host " + QuotedExcerpt(host) +
                                             ": expected a host name (timers.internal) or "
                                             "*.example.com, without scheme or port");
    }
    guard.public_hosts_.push_back(std::move(name));
  }
  for (const std::string& origin : options.allow_origins) {
    std::string o = AsciiLower(origin);
    if (!o.empty() && o.back() == '/') o.pop_back();
    if (!ValidOrigin(o)) {
      return Status::Invalid("bad_flag", "--allow-origin " + QuotedExcerpt(origin) +
                                             ": expected an origin such as "
                                             "https://ops.example.com (scheme, host, port)");
    }
    guard.allow_origins_.push_back(std::move(o));
  }
  return guard;
}

std::string RequestGuard::HostOf(std::string_view value) {
  std::string_view host = value;
  if (!host.empty() && host.front() == '[') {
    const std::size_t end = host.find(']');
    if (end == std::string_view::npos) return "";
    const std::string_view rest = host.substr(end + 1);
    if (!rest.empty() && rest.front() != ':') return "";
    host = host.substr(1, end - 1);
  } else if (const std::size_t colon = host.rfind(':'); colon != std::string_view::npos) {
    const std::string_view port = host.substr(colon + 1);
    if (!std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return "";
    }
    host = host.substr(0, colon);
  }
  std::string out = AsciiLower(host);
  if (!out.empty() && out.back() == '.') out.pop_back();
  return out;
}

Status RequestGuard::CheckHost(const HttpRequest& head) const {
  if (head.count(http::field::host) > 1) {
    return Status::Invalid("bad_request", "the request has two Host headers");
  }
  auto it = head.find(http::field::host);
  if (it == head.end()) return Status::Ok();
  const std::string host = HostOf(it->value());
  if (!host.empty()) {
    if (IsIpLiteral(host) || host == "localhost") return Status::Ok();
    for (const std::string& name : public_hosts_) {
      if (HostMatchesPattern(name, host)) return Status::Ok();
    }
  }
  std::string names = "IP addresses, localhost";
  for (const std::string& name : public_hosts_) names += ", " + name;
  return Status(StatusCode::kInvalidArgument, "misdirected_request",
                "Host " + QuotedExcerpt(it->value()) + " does not name this server (it answers to " +
                    names +
                    "): a web page whose name points at the server (DNS rebinding) is refused "
                    "this way. If clients reach the server by this name, start it with "
                    "--public-host " + (host.empty() ? std::string("NAME") : host));
}

Result<std::optional<std::string>> RequestGuard::CheckOrigin(const HttpRequest& head) const {
  auto origin_field = head.find(http::field::origin);
  if (origin_field == head.end()) {
    // No Origin: a program, or a browser's navigation or no-cors GET; the
    // latter two say where they come from.
    const std::string site = AsciiLower(head["Sec-Fetch-Site"]);
    if (site == "cross-site" || site == "same-site") {
      return Status(StatusCode::kPermissionDenied, "origin_not_allowed",
                    "a request a web page made from another site (Sec-Fetch-Site: " + site +
                        ") is refused; the API is for programs, the console and the origins in "
                        "--allow-origin");
    }
    return std::optional<std::string>();
  }
  const std::string origin = AsciiLower(origin_field->value());
  const std::size_t scheme = origin.find("://");
  if (scheme != std::string::npos) {
    auto host = head.find(http::field::host);
    if (host != head.end() && AsciiLower(host->value()) == origin.substr(scheme + 3)) {
      return std::optional<std::string>();  // the server's own page (the console)
    }
    for (const std::string& allowed : allow_origins_) {
      if (origin == allowed) return std::optional<std::string>(allowed);
    }
  }
  return Status(StatusCode::kPermissionDenied, "origin_not_allowed",
                "requests from web pages at " + QuotedExcerpt(origin_field->value()) +
                    " are refused: only the server's own pages (the console) and the origins "
                    "in --allow-origin may call the API from a browser");
}

Status RequestGuard::CheckContentType(const HttpRequest& head, bool has_body) {
  if (!has_body) return Status::Ok();
  const std::string_view value = head[http::field::content_type];
  const std::string type = AsciiLower(value.substr(0, value.find(';')));
  std::string_view trimmed = type;
  while (!trimmed.empty() && trimmed.back() == ' ') trimmed.remove_suffix(1);
  while (!trimmed.empty() && trimmed.front() == ' ') trimmed.remove_prefix(1);
  if (trimmed == "application/json") return Status::Ok();
  return Status(StatusCode::kInvalidArgument, "unsupported_media_type",
                "the body must be JSON sent as Content-Type: application/json" +
                    (value.empty() ? std::string(" (there was no Content-Type)")
                                   : " (not " + QuotedExcerpt(value) + ")") +
                    "; e.g. curl --json '{...}'");
}

HttpResponse RequestGuard::Preflight(const std::string& origin, std::string_view methods) {
  HttpResponse res;
  res.result(http::status::no_content);
  AllowOrigin(res, origin);
  if (!methods.empty()) res.set(http::field::access_control_allow_methods, methods);
  // traceparent and tracestate: a page may create timers in its trace.
  res.set(http::field::access_control_allow_headers,
          "Authorization, Content-Type, traceparent, tracestate");
  res.set(http::field::access_control_max_age, "600");
  return res;
}

void RequestGuard::AllowOrigin(HttpResponse& res, const std::string& origin) {
  res.set(http::field::access_control_allow_origin, origin);
  res.set(http::field::vary, "Origin");
}

}  // namespace tickwheel::server
