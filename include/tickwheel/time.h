// SPDX-License-Identifier: Apache-2.0
// Time types shared by every layer of tickwheel.
#ifndef TICKWHEEL_TIME_H_
#define TICKWHEEL_TIME_H_

#include <chrono>

namespace tickwheel {

// Durations are nanoseconds; time points are on the steady (monotonic) clock.
// Code above the core takes a Clock (clock.h) instead of reading
// std::chrono::steady_clock directly, so tests can run on manual time.
using Duration = std::chrono::nanoseconds;
using TimePoint = std::chrono::steady_clock::time_point;

}  // namespace tickwheel

#endif  // TICKWHEEL_TIME_H_
