// SPDX-License-Identifier: Apache-2.0
// Webhook target URLs: http[s]://host[:port]/path[?query].
#ifndef TICKWHEEL_SERVER_TIMER_HTTP_URL_H_
#define TICKWHEEL_SERVER_TIMER_HTTP_URL_H_

#include <string>
#include <string_view>

#include "common/status.h"

namespace tickwheel::server {

struct HttpUrl {
  bool tls = false;    // https
  std::string host;    // lower case; an IPv6 literal without its brackets
  std::string port;    // "80" or "443" when absent
  std::string target;  // path and query, "/" when absent

  // "host:port" as the Host header wants it (brackets around IPv6).
  std::string HostHeader() const;
};

// Parses a webhook URL. Scheme and host are case-insensitive. Fails with
// kInvalidArgument ("invalid_value": a malformed URL, credentials in it,
// spaces or control characters) or "unsupported_target" (a scheme other than
// http or https), the message saying what is wrong.
Result<HttpUrl> ParseHttpUrl(std::string_view url);

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_TIMER_HTTP_URL_H_
