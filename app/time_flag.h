// SPDX-License-Identifier: Apache-2.0
// Points in time on the command line (--at): RFC 3339, as printed by
// `date -u +%FT%TZ` and by `tickwheel get`.
#ifndef TICKWHEEL_APP_TIME_FLAG_H_
#define TICKWHEEL_APP_TIME_FLAG_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace tickwheel::app {

// Parses an RFC 3339 date-time into Unix milliseconds:
// "2026-11-25T20:00:00Z", "2026-11-25T21:00:00.250+01:00" (T or t or a
// space between date and time; Z, z or a numeric offset; fractions beyond
// milliseconds are cut). On failure returns false and sets `error` to a
// message for people: a bare number is refused with a hint, since it could
// be seconds or milliseconds.
bool ParseTimeFlag(std::string_view text, std::int64_t& unix_ms, std::string& error);

// "2026-11-25T20:00:00.250Z" for Unix milliseconds.
std::string FormatRfc3339(std::int64_t unix_ms);

}  // namespace tickwheel::app

#endif  // TICKWHEEL_APP_TIME_FLAG_H_
