// SPDX-License-Identifier: Apache-2.0
// Fuzzes ParseHttpUrl (server/timer/http_url.h), which decides what a
// webhook target is: the API accepts a target URL only if it parses, and
// the webhook client connects to its host and port and sends its target.
//
// Oracle: any bytes give a URL or an error (reason "invalid_value", or
// "unsupported_target" exactly for a scheme other than http and https, and
// a message). What is accepted is http[s]://host[:port]/path[?query]: a
// lower-case host of [a-z0-9._-] or an IPv6 literal of hex digits, ':' and
// '.', a port of 1..65535 without leading zeros (80 or 443 when absent), a
// target starting with '/' with no space, control character or fragment;
// its parts re-assembled (scheme, HostHeader(), target) parse to the same
// parts. Stricter, as known defects (decoder_checks.h) until server/ fixes
// them: the target is ASCII (it is sent raw in the request line), and the
// host is a name (non-empty labels of at most 63 characters, not starting
// or ending with '-') or an address that inet_pton accepts.
#include <arpa/inet.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "decoder_checks.h"
#include "timer/http_url.h"

namespace tickwheel::testing {
namespace {

void Require(bool ok, const std::string& what, std::string_view url) {
  if (!ok) FuzzFail("ParseHttpUrl(\"" + std::string(url) + "\"): " + what);
}

bool IsDnsName(std::string_view host) {
  if (host.size() > 253) return false;
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = host.find('.', start);
    const std::string_view label = host.substr(start, dot - start);
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') {
      return false;
    }
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

bool IsIpv6(const std::string& host) {
  unsigned char out[16];
  return inet_pton(AF_INET6, host.c_str(), out) == 1;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

void FuzzOne(std::string_view url) {
  const auto parsed = server::ParseHttpUrl(url);
  const std::size_t sep = url.find("://");
  const std::string scheme = sep == std::string_view::npos ? "" : Lower(url.substr(0, sep));
  if (!parsed.ok()) {
    const server::Status& s = parsed.status();
    Require(!s.message().empty(), "rejected without a message", url);
    Require(s.reason() == "invalid_value" || s.reason() == "unsupported_target",
            "rejected as " + s.reason(), url);
    Require((s.reason() == "unsupported_target") ==
                (sep != std::string_view::npos && scheme != "http" && scheme != "https"),
            "called " + s.reason() + ": " + s.message(), url);
    return;
  }
  const server::HttpUrl& u = *parsed;
  Require(scheme == (u.tls ? "https" : "http"), "scheme and tls disagree", url);
  Require(!u.host.empty(), "accepted an empty host", url);
  const bool v6 = u.host.find(':') != std::string::npos;
  for (char c : u.host) {
    const bool ok = v6 ? ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || c == ':' || c == '.')
                       : ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
                          c == '-' || c == '_');
    Require(ok, "host \"" + u.host + "\" has a bad character", url);
  }
  Require(!u.port.empty() && u.port.size() <= 5 && u.port[0] != '0', "port " + u.port, url);
  int port = 0;
  for (char c : u.port) {
    Require(c >= '0' && c <= '9', "port " + u.port, url);
    port = port * 10 + (c - '0');
  }
  Require(port >= 1 && port <= 65535, "port " + u.port + " out of range", url);
  Require(!u.target.empty() && u.target[0] == '/',
          "target \"" + u.target + "\" does not start with /", url);
  Require(u.target.find('#') == std::string::npos, "the target has a fragment", url);
  bool ascii = true;
  for (char c : u.target) {
    const auto b = static_cast<unsigned char>(c);
    Require(b > 0x20 && b != 0x7f, "a space or control character in the target", url);
    ascii = ascii && b < 0x7f;
  }
  const std::string again = (u.tls ? "https://" : "http://") + u.HostHeader() + u.target;
  const auto reparsed = server::ParseHttpUrl(again);
  Require(reparsed.ok() && reparsed->tls == u.tls && reparsed->host == u.host &&
              reparsed->port == u.port && reparsed->target == u.target,
          "parts do not re-parse to themselves: " + again, url);
  // Known defects, see the file comment.
  if (!ascii) {
    Require(false, "the target has bytes that are not ASCII (sent raw)", url);
  }
  if (!(v6 ? IsIpv6(u.host) : IsDnsName(u.host))) {
    Require(false, "the host \"" + u.host + "\" is neither a DNS name nor an IPv6 address", url);
  }
}

}  // namespace
}  // namespace tickwheel::testing

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  tickwheel::testing::FuzzOne(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
