#include "delivery/http_url.h"

#include <cctype>

namespace tickwheel::server {

std::optional<HttpUrl> ParseHttpUrl(std::string_view url, std::string* error,
                                    bool* unsupported_scheme) {
  auto fail = [&](std::string message, bool scheme = false) {
    if (error) *error = std::move(message);
    if (unsupported_scheme) *unsupported_scheme = scheme;
    return std::nullopt;
  };
  const std::size_t colon = url.find("://");
  if (colon == std::string_view::npos) {
    return fail("not a URL (expected http://host:port/path)");
  }
  const std::string_view scheme = url.substr(0, colon);
  if (scheme != "http") {
    return fail("scheme '" + std::string(scheme) +
                    "' is not supported (only http:// webhooks)",
                true);
  }
  std::string_view rest = url.substr(colon + 3);
  const std::size_t slash = rest.find_first_of("/?");
  std::string_view authority = rest.substr(0, slash);
  HttpUrl out;
  out.target = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
  if (!out.target.empty() && out.target[0] == '?') out.target.insert(0, "/");
  if (authority.find('@') != std::string_view::npos) {
    return fail("credentials in the URL are not supported");
  }
  const std::size_t port_colon = authority.rfind(':');
  if (port_colon != std::string_view::npos) {
    std::string_view port = authority.substr(port_colon + 1);
    if (port.empty() || port.size() > 5) return fail("bad port in URL");
    for (char c : port) {
      if (!std::isdigit(static_cast<unsigned char>(c))) return fail("bad port in URL");
    }
    if (std::stoi(std::string(port)) == 0 || std::stoi(std::string(port)) > 65535) {
      return fail("port out of range in URL");
    }
    out.port = std::string(port);
    authority = authority.substr(0, port_colon);
  } else {
    out.port = "80";
  }
  if (authority.empty()) return fail("no host in URL");
  for (char c : authority) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' ||
          c == '_')) {
      return fail("bad character in the URL's host");
    }
  }
  for (char c : out.target) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
      return fail("spaces or control characters in the URL's path");
    }
  }
  out.host = std::string(authority);
  return out;
}

}  // namespace tickwheel::server
