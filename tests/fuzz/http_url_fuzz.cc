// Fuzzes ParseHttpUrl (server/delivery/http_url.h), which decides what a
// webhook target is: the API accepts a target URL only if it parses, and
// the webhook client connects to its host and port and sends its target.
//
// Oracle: any bytes give a URL or an error message (and "unsupported" only
// for a scheme other than http). What is accepted is
// http://host[:port]/path[?query]: a host of [A-Za-z0-9._-], a port of
// 1..65535 ("80" when absent), a target starting with '/' with no space or
// control character; its parts re-assembled parse to the same parts.
// Stricter, as known defects (decoder_checks.h) until server/ fixes them:
// the target is printable ASCII without a fragment (it is sent as the
// request-target), and the host is a DNS name (non-empty labels of at most
// 63 characters, not starting or ending with '-').
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "decoder_checks.h"
#include "delivery/http_url.h"

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
    if (label.empty() || label.size() > 63 || label.front() == '-' ||
        label.back() == '-') {
      return false;
    }
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

void FuzzOne(std::string_view url) {
  std::string error;
  bool unsupported = false;
  const auto parsed = server::ParseHttpUrl(url, &error, &unsupported);
  if (!parsed) {
    Require(!error.empty(), "rejected without a message", url);
    const std::size_t sep = url.find("://");
    Require(!unsupported || (sep != std::string_view::npos && url.substr(0, sep) != "http"),
            "called unsupported: " + error, url);
    return;
  }
  Require(url.substr(0, 7) == "http://", "accepted without http://", url);
  Require(!parsed->host.empty(), "accepted an empty host", url);
  for (char c : parsed->host) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
    Require(ok, "host \"" + parsed->host + "\" has a bad character", url);
  }
  Require(!parsed->port.empty() && parsed->port.size() <= 5, "port " + parsed->port, url);
  int port = 0;
  for (char c : parsed->port) {
    Require(c >= '0' && c <= '9', "port " + parsed->port, url);
    port = port * 10 + (c - '0');
  }
  Require(port >= 1 && port <= 65535, "port " + parsed->port + " out of range", url);
  const std::size_t authority_end = url.find_first_of("/?", 7);
  const std::string_view authority = url.substr(7, authority_end - 7);
  if (authority.find(':') == std::string_view::npos) {
    Require(parsed->port == "80", "no port given, but port " + parsed->port, url);
  }
  Require(!parsed->target.empty() && parsed->target[0] == '/',
          "target \"" + parsed->target + "\" does not start with /", url);
  bool printable_ascii = true;
  for (char c : parsed->target) {
    const auto u = static_cast<unsigned char>(c);
    Require(u > 0x20 && u != 0x7f, "a space or control character in the target", url);
    printable_ascii = printable_ascii && u < 0x7f;
  }
  const std::string again = "http://" + parsed->host + ":" + parsed->port + parsed->target;
  const auto reparsed = server::ParseHttpUrl(again);
  Require(reparsed && reparsed->host == parsed->host && reparsed->port == parsed->port &&
              reparsed->target == parsed->target,
          "parts do not re-parse to themselves: " + again, url);
  // Known defects, see the file comment.
  if (!printable_ascii && !KnownDefect("url-target-not-ascii")) {
    Require(false, "the target has bytes that are not ASCII (sent raw)", url);
  }
  if (parsed->target.find('#') != std::string::npos && !KnownDefect("url-fragment-sent")) {
    Require(false, "the target has a fragment (sent as part of the request-target)", url);
  }
  if (!IsDnsName(parsed->host) && !KnownDefect("url-host-not-a-name")) {
    Require(false, "the host \"" + parsed->host + "\" is not a DNS name", url);
  }
}

}  // namespace
}  // namespace tickwheel::testing

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  tickwheel::testing::FuzzOne(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
