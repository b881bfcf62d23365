// SPDX-License-Identifier: Apache-2.0
// Time arithmetic that cannot overflow.
#ifndef TICKWHEEL_INTERNAL_TIME_MATH_H_
#define TICKWHEEL_INTERNAL_TIME_MATH_H_

#include <cstdint>

#include "tickwheel/time.h"

namespace tickwheel::internal {

// `t + d`, saturated at TimePoint::max() / min(): any delay, up to
// Duration::max(), can be added to any time. (Plain `t + d` overflows a
// signed 64-bit count, which is undefined behaviour, once the sum passes
// the year 2262 of the steady clock.) A time saturated at TimePoint::max()
// is as good as never: a Wheel clamps it to its last tick.
inline TimePoint AddSaturated(TimePoint t, Duration d) {
  std::int64_t sum = 0;
  if (__builtin_add_overflow(t.time_since_epoch().count(), d.count(), &sum)) {
    return d.count() > 0 ? TimePoint::max() : TimePoint::min();
  }
  return TimePoint(Duration(sum));
}

// The first of `tick`, `tick + period`, `tick + 2 * period`, ... that is
// after `now`, saturated at TimePoint::max(): how a fixed-rate loop that woke
// at `now` skips the ticks it missed, keeping its phase.
// REQUIRES: period > 0.
inline TimePoint NextTickAfter(TimePoint tick, TimePoint now, Duration period) {
  if (now < tick) return tick;
  const Duration behind = now - tick;
  return AddSaturated(AddSaturated(tick, behind - behind % period), period);
}

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_INTERNAL_TIME_MATH_H_
