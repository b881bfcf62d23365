// Webhook target URLs: http://host[:port]/path[?query].
#ifndef TICKWHEEL_SERVER_DELIVERY_HTTP_URL_H_
#define TICKWHEEL_SERVER_DELIVERY_HTTP_URL_H_

#include <optional>
#include <string>
#include <string_view>

namespace tickwheel::server {

struct HttpUrl {
  std::string host;
  std::string port;    // "80" when absent
  std::string target;  // path and query, "/" when absent
};

// Parses a plain-HTTP URL. On failure returns nullopt and sets `error` (if
// given) to what is wrong; https and other schemes are "unsupported".
std::optional<HttpUrl> ParseHttpUrl(std::string_view url,
                                    std::string* error = nullptr,
                                    bool* unsupported_scheme = nullptr);

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_DELIVERY_HTTP_URL_H_
