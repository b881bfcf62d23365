// Wall-clock time as the server persists it: Unix milliseconds.
#ifndef TICKWHEEL_SERVER_WALL_CLOCK_H_
#define TICKWHEEL_SERVER_WALL_CLOCK_H_

#include <chrono>
#include <cstdint>

#include "tickwheel/time.h"

namespace tickwheel::server {

inline std::int64_t WallNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The steady-clock time at which the wall clock will read `unix_ms`, as
// far as can be told now. Rounds up, so a timer armed at the result never
// fires before the wall clock reaches `unix_ms` (unless the wall clock is
// stepped back later).
inline TimePoint SteadyDeadlineForWallMs(std::int64_t unix_ms) {
  const auto steady_now = std::chrono::steady_clock::now();
  const auto wall_now = std::chrono::system_clock::now().time_since_epoch();
  const auto target = std::chrono::milliseconds(unix_ms);
  return steady_now + std::chrono::duration_cast<Duration>(target - wall_now) +
         std::chrono::microseconds(1);
}

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_WALL_CLOCK_H_
