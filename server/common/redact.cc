// SPDX-License-Identifier: Apache-2.0
#include "common/redact.h"

#include <algorithm>
#include <cctype>

namespace tickwheel::server {
namespace {

bool StartsWithNoCase(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() &&
         std::equal(prefix.begin(), prefix.end(), s.begin(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) ==
                  std::tolower(static_cast<unsigned char>(b));
         });
}

bool IsSpace(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

// Replaces the values of the secret parameters: in a URL's query
// (?password=x&...) and in a key=value connection string, where spaces may
// surround '=' and a value may be single-quoted with \' and \\ escapes
// (libpq's rules).
std::string RedactParameters(std::string s) {
  static constexpr std::string_view kKeys[] = {"password", "sslpassword", "token", "nkey"};
  std::string out;
  out.reserve(s.size());
  std::size_t at = 0;
  while (at < s.size()) {
    const bool boundary = at == 0 || s[at - 1] == '?' || s[at - 1] == '&' || IsSpace(s[at - 1]);
    std::size_t key_end = std::string::npos;
    if (boundary) {
      for (std::string_view key : kKeys) {
        if (!StartsWithNoCase(std::string_view(s).substr(at), key)) continue;
        std::size_t p = at + key.size();
        while (p < s.size() && IsSpace(s[p])) ++p;
        if (p < s.size() && s[p] == '=') {
          key_end = p + 1;
          break;
        }
      }
    }
    if (key_end == std::string::npos) {
      out += s[at++];
      continue;
    }
    out.append(s, at, key_end - at);
    std::size_t p = key_end;
    while (p < s.size() && IsSpace(s[p])) out += s[p++];
    if (p < s.size() && s[p] == '\'') {
      ++p;
      while (p < s.size() && s[p] != '\'') p += (s[p] == '\\' && p + 1 < s.size()) ? 2 : 1;
      if (p < s.size()) ++p;  // the closing quote
    } else {
      while (p < s.size() && !IsSpace(s[p]) && s[p] != '&') ++p;
    }
    out += "***";
    at = p;
  }
  return out;
}

}  // namespace

std::string RedactUrl(std::string_view url) {
  std::string out(url);
  const std::size_t scheme = out.find("://");
  if (scheme != std::string::npos) {
    // libpq and NATS take the user information up to an '@' before the
    // first '/': a password may hold '?', '#' and '@' raw. Everything up to
    // the last '@' before that '/' is treated as credentials.
    const std::size_t start = scheme + 3;
    const std::size_t end = std::min(out.find('/', start), out.size());
    const std::size_t at = out.rfind('@', end);
    if (at != std::string::npos && at >= start) {
      const std::size_t colon = out.find(':', start);
      if (colon != std::string::npos && colon < at) {
        out.replace(colon + 1, at - colon - 1, "***");  // user:***@host
      } else if (StartsWithNoCase(out, "nats")) {
        out.replace(start, at - start, "***");  // nats://TOKEN@host
      }
    }
  }
  return RedactParameters(std::move(out));
}

}  // namespace tickwheel::server
