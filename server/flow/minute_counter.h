// SPDX-License-Identifier: Apache-2.0
// MinuteCounter: events of the last minute, in one-second slots.
#ifndef TICKWHEEL_SERVER_FLOW_MINUTE_COUNTER_H_
#define TICKWHEEL_SERVER_FLOW_MINUTE_COUNTER_H_

#include <algorithm>
#include <array>
#include <cstdint>

namespace tickwheel::server {

// Counts events by the second they happened in (wall-clock Unix ms), and
// sums those of the last 60 seconds. Thread safety: none. Cost: O(1) per
// Add, O(60) per Sum; 488 bytes.
//
//   MinuteCounter sent;
//   sent.Add(clock.WallMs(), 5);
//   std::int64_t last_minute = sent.Sum(clock.WallMs());
class MinuteCounter {
 public:
  void Add(std::int64_t now_ms, std::int64_t n) {
    Advance(now_ms);
    slots_[static_cast<std::size_t>(second_ % 60)] += n;
  }
  // Events in the 60 seconds up to now_ms (the current second included).
  std::int64_t Sum(std::int64_t now_ms) const {
    const std::int64_t second = now_ms / 1000;
    std::int64_t sum = 0;
    for (std::int64_t k = 0; k < 60; ++k) {
      const std::int64_t s = second_ - k;
      if (s > second - 60 && s <= second) sum += slots_[static_cast<std::size_t>(s % 60)];
    }
    return sum;
  }
  // Whether nothing happened in the last minute.
  bool Idle(std::int64_t now_ms) const { return Sum(now_ms) == 0; }

 private:
  void Advance(std::int64_t now_ms) {
    const std::int64_t second = now_ms / 1000;
    if (second <= second_) return;
    for (std::int64_t s = std::max(second_ + 1, second - 59); s <= second; ++s) {
      slots_[static_cast<std::size_t>(s % 60)] = 0;
    }
    second_ = second;
  }

  std::array<std::int64_t, 60> slots_{};
  std::int64_t second_ = 0;
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_FLOW_MINUTE_COUNTER_H_
