// Durations on the command line: "30s", "250ms", "1.5h".
#ifndef TICKWHEEL_APP_DURATION_FLAG_H_
#define TICKWHEEL_APP_DURATION_FLAG_H_

#include <optional>
#include <string>
#include <string_view>

#include "tickwheel/time.h"

namespace tickwheel::app {

// Parses a non-negative decimal number followed by a unit: ns, us, ms, s,
// m, h or d. Returns nullopt for anything else (no unit, negative, junk).
std::optional<Duration> ParseDuration(std::string_view text);

// "1.5s", "250ms": the shortest exact-enough form, for messages.
std::string FormatDuration(Duration d);

}  // namespace tickwheel::app

#endif  // TICKWHEEL_APP_DURATION_FLAG_H_
