// SPDX-License-Identifier: Apache-2.0
#include "common/host_pattern.h"

#include <string_view>

namespace tickwheel::server {

bool HostMatchesPattern(const std::string& pattern, const std::string& host) {
  if (pattern.rfind("*.", 0) == 0) {
    const std::string_view suffix = std::string_view(pattern).substr(1);  // ".example.com"
    return host.size() > suffix.size() &&
           host.compare(host.size() - suffix.size(), suffix.size(), suffix) == 0;
  }
  return pattern == host;
}

}  // namespace tickwheel::server
