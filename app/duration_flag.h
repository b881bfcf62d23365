// SPDX-License-Identifier: Apache-2.0
// Durations on the command line: "30s", "250ms", "1.5h", "1h30m", "0".
#ifndef TICKWHEEL_APP_DURATION_FLAG_H_
#define TICKWHEEL_APP_DURATION_FLAG_H_

#include <optional>
#include <string>
#include <string_view>

#include "tickwheel/time.h"

namespace tickwheel::app {

// Parses one or more non-negative decimal numbers, each followed by a unit
// (ns, us, ms, s, m, h, d), added up: "1h30m", "2d12h", "1.5s", "250ms". A
// bare "0" is zero (no unit needed for nothing). Returns nullopt for
// anything else: a number without a unit ("30": seconds or milliseconds?),
// a sign, spaces, an unknown unit, or more than int64 nanoseconds hold.
std::optional<Duration> ParseDuration(std::string_view text);

// "1.5s", "250ms": the shortest exact-enough form, for messages.
std::string FormatDuration(Duration d);

}  // namespace tickwheel::app

#endif  // TICKWHEEL_APP_DURATION_FLAG_H_
