// SPDX-License-Identifier: Apache-2.0
#include "timer/http_url.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include <arpa/inet.h>

#include "common/ascii_case.h"

namespace tickwheel::server {
namespace {

Status Bad(std::string message) {
  return Status::Invalid("invalid_value", std::move(message));
}

bool IsHostChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_';
}

// Dot-separated labels of 1..63 characters, not starting or ending with
// '-', 253 characters at most (RFC 1123); a trailing dot is not accepted.
bool IsDnsName(std::string_view host) {
  if (host.empty() || host.size() > 253) return false;
  for (std::size_t start = 0;;) {
    const std::size_t dot = host.find('.', start);
    const std::string_view label = host.substr(start, dot - start);
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') {
      return false;
    }
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

}  // namespace

std::string HttpUrl::HostHeader() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + port;
}

Result<HttpUrl> ParseHttpUrl(std::string_view url) {
  const std::size_t colon = url.find("://");
  if (colon == std::string_view::npos) {
    return Bad("not a URL (expected http://host:port/path)");
  }
  const std::string scheme = AsciiLower(url.substr(0, colon));
  HttpUrl out;
  if (scheme == "https") {
    out.tls = true;
  } else if (scheme != "http") {
    return Status::Invalid("unsupported_target",
                           "scheme '" + std::string(url.substr(0, colon)) +
                               "' is not supported (http:// and https:// webhooks)");
  }
  std::string_view rest = url.substr(colon + 3);
  const std::size_t slash = rest.find_first_of("/?#");
  std::string_view authority = rest.substr(0, slash);
  out.target = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
  if (const std::size_t hash = out.target.find('#'); hash != std::string::npos) {
    out.target.resize(hash);  // a fragment is never sent
  }
  if (out.target.empty() || out.target[0] != '/') out.target.insert(0, "/");
  if (authority.find('@') != std::string_view::npos) {
    return Bad("credentials in the URL are not supported (use target headers)");
  }
  std::string_view host = authority;
  std::string_view port;
  if (!authority.empty() && authority.front() == '[') {  // [IPv6]:port
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) return Bad("unclosed '[' in the URL's host");
    host = authority.substr(1, close - 1);
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return Bad("bad character after the URL's IPv6 host");
      port = after.substr(1);
      if (port.empty()) return Bad("bad port in URL");
    }
    unsigned char address[16];
    const bool v6_chars = std::all_of(host.begin(), host.end(), [](char c) {
      return std::isxdigit(static_cast<unsigned char>(c)) || c == ':' || c == '.';
    });
    if (!v6_chars || inet_pton(AF_INET6, std::string(host).c_str(), address) != 1) {
      return Bad("the URL's host is not an IPv6 address");
    }
  } else {
    if (const std::size_t port_colon = authority.rfind(':');
        port_colon != std::string_view::npos) {
      host = authority.substr(0, port_colon);
      port = authority.substr(port_colon + 1);
      if (port.empty()) return Bad("bad port in URL");
    }
    if (host.empty()) return Bad("no host in URL");
    if (!std::all_of(host.begin(), host.end(), IsHostChar)) {
      return Bad("bad character in the URL's host");
    }
    if (!IsDnsName(host)) return Bad("the URL's host is not a host name (empty or long labels)");
  }
  if (!port.empty()) {
    int n = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), n);
    if (ec != std::errc() || end != port.data() + port.size() || port.size() > 5) {
      return Bad("bad port in URL");
    }
    if (n < 1 || n > 65535) return Bad("port out of range in URL");
    out.port = std::to_string(n);
  } else {
    out.port = out.tls ? "443" : "80";
  }
  for (char c : out.target) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
      return Bad("spaces or control characters in the URL's path");
    }
    if (static_cast<unsigned char>(c) >= 0x80) {
      return Bad("characters outside ASCII in the URL's path: percent-encode them");
    }
  }
  out.host = AsciiLower(host);
  return out;
}

}  // namespace tickwheel::server
