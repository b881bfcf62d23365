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

// Replaces the values of password=... and token=... (up to '&' or a space).
std::string RedactParameters(std::string s) {
  for (std::string_view key : {"password=", "token=", "nkey=", "sslpassword="}) {
    for (std::size_t at = 0; at < s.size(); ++at) {
      const bool boundary = at == 0 || s[at - 1] == '?' || s[at - 1] == '&' || s[at - 1] == ' ';
      if (!boundary || !StartsWithNoCase(std::string_view(s).substr(at), key)) continue;
      const std::size_t from = at + key.size();
      const std::size_t to = std::min(s.find_first_of("& ", from), s.size());
      s.replace(from, to - from, "***");
      at = from + 3;
    }
  }
  return s;
}

}  // namespace

std::string RedactUrl(std::string_view url) {
  std::string out(url);
  const std::size_t scheme = out.find("://");
  if (scheme != std::string::npos) {
    const std::size_t start = scheme + 3;
    const std::size_t end = std::min(out.find_first_of("/?#", start), out.size());
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
