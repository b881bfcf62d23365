// SPDX-License-Identifier: Apache-2.0
#include "common/server_clock.h"

#include <chrono>

namespace tickwheel::server {

TimePoint ServerClock::SteadyAt(std::int64_t unix_ms) {
  const TimePoint steady_now = steady().Now();
  const std::int64_t wall_now = WallMs();
  return steady_now + std::chrono::milliseconds(unix_ms - wall_now) +
         std::chrono::microseconds(1);
}

SystemServerClock& SystemServerClock::Instance() {
  static SystemServerClock clock;
  return clock;
}

std::int64_t SystemServerClock::WallMs() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Clock& SystemServerClock::steady() { return SystemClock::Instance(); }

ManualServerClock::ManualServerClock(std::int64_t wall_ms_at_start)
    : start_(steady_.Now()), wall_ms_at_start_(wall_ms_at_start) {}

std::int64_t ManualServerClock::WallMs() const {
  return wall_ms_at_start_ + wall_step_ms_.load() +
         std::chrono::duration_cast<std::chrono::milliseconds>(steady_.Now() - start_).count();
}

}  // namespace tickwheel::server
