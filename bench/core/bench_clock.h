// SPDX-License-Identifier: Apache-2.0
// Clocks of the core benchmark: the monotonic clock every backend shares,
// and sleeping until a time on it.
#ifndef TICKWHEEL_BENCH_CORE_BENCH_CLOCK_H_
#define TICKWHEEL_BENCH_CORE_BENCH_CLOCK_H_

#include <time.h>

#include <cstdint>

namespace tickwheel::bench {

// Nanoseconds on CLOCK_MONOTONIC, the clock of std::chrono::steady_clock
// (libstdc++), libevent (precise timer), libev and libuv, so a deadline
// means the same instant to every backend.
inline std::int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// Blocks until NowNs() >= `deadline_ns` (returns at once if it already is).
inline void SleepUntilNs(std::int64_t deadline_ns) {
  if (deadline_ns <= NowNs()) return;
  timespec ts;
  ts.tv_sec = deadline_ns / 1'000'000'000;
  ts.tv_nsec = deadline_ns % 1'000'000'000;
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) != 0) {
  }
}

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_BENCH_CORE_BENCH_CLOCK_H_
