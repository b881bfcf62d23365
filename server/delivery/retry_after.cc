// SPDX-License-Identifier: Apache-2.0
#include "delivery/retry_after.h"

#include <algorithm>
#include <charconv>
#include <string>

namespace tickwheel::server {

std::int64_t RetryAfterMs(std::string_view value, std::time_t now) {
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  while (!value.empty() && value.back() == ' ') value.remove_suffix(1);
  if (value.empty()) return 0;
  if (value.front() >= '0' && value.front() <= '9') {
    std::int64_t seconds = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), seconds);
    if (ec != std::errc() || end != value.data() + value.size()) return 0;
    constexpr std::int64_t kYear = 366LL * 24 * 3600;
    return std::min(seconds, kYear) * 1000;
  }
  std::tm tm{};
  const std::string text(value);
  const char* end = strptime(text.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (end == nullptr || *end != '\0') return 0;
  const std::time_t at = timegm(&tm);
  return at > now ? static_cast<std::int64_t>(at - now) * 1000 : 0;
}

}  // namespace tickwheel::server
