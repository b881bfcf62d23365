// SPDX-License-Identifier: Apache-2.0
// Host names against the patterns operators write in flags (--public-host,
// the SSRF guard's allow and deny lists).
#ifndef TICKWHEEL_SERVER_COMMON_HOST_PATTERN_H_
#define TICKWHEEL_SERVER_COMMON_HOST_PATTERN_H_

#include <string>

namespace tickwheel::server {

// True if `host` is `pattern`, or `pattern` is "*.example.com" and `host`
// ends in ".example.com" with at least one character before it (the bare
// "example.com" does not match). Both are compared as given: callers pass
// lower-case names.
bool HostMatchesPattern(const std::string& pattern, const std::string& host);

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_COMMON_HOST_PATTERN_H_
