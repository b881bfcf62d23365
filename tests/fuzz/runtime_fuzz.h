// SPDX-License-Identifier: Apache-2.0
// Shared by the fuzzers of the threaded runtime (TimingWheel, TimerService)
// on a ManualClock: the tick arithmetic of the wheel underneath, the
// decoding of delays and time steps, and a log of what callbacks ran.
//
// Determinism: ManualClock::Advance returns once the runtime's timer thread
// has handed out everything due at the new time, but the work then runs on
// a worker thread. The fuzzers use one worker and "settle" after every step
// that can make something run: they add a sentinel due at once, wait until
// it has run, and do that once more. The worker runs items in submission
// order, and the second sentinel is submitted after the first has run, so
// when it has run, everything handed out before it has run too, whatever
// shard it came from. Only then do they compare what ran with the model.
#ifndef TICKWHEEL_TESTS_FUZZ_RUNTIME_FUZZ_H_
#define TICKWHEEL_TESTS_FUZZ_RUNTIME_FUZZ_H_

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

#include "fuzz_source.h"
#include "tickwheel/time.h"

namespace tickwheel::testing {

__extension__ using Wide = __int128;
inline constexpr std::int64_t kMaxNs = std::numeric_limits<std::int64_t>::max();
// Time stays below this in the fuzzers, far from the end of the range.
inline constexpr std::int64_t kTimeLimitNs = std::int64_t{1} << 62;

inline std::int64_t Ns(TimePoint t) { return t.time_since_epoch().count(); }
inline std::int64_t SaturatingAdd(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(
      std::clamp<Wide>(Wide{a} + b, std::numeric_limits<std::int64_t>::min(), kMaxNs));
}

// The tick arithmetic of a Wheel with this tick and origin (wheel.h): a
// deadline is due at the tick it rounds up to (clamped to the last
// representable tick), and Advance(now) fires what is due at now rounded
// down.
struct TickModel {
  std::int64_t tick_ns;
  std::int64_t origin_ns;

  std::uint64_t MaxTick() const {
    return static_cast<std::uint64_t>((Wide{kMaxNs} - std::max<std::int64_t>(origin_ns, 0)) /
                                      tick_ns);
  }
  std::uint64_t DueTick(std::int64_t deadline_ns) const {
    const Wide d = Wide{deadline_ns} - origin_ns;
    if (d <= 0) return 0;
    return static_cast<std::uint64_t>(
        std::min<Wide>((d + tick_ns - 1) / tick_ns, Wide{MaxTick()}));
  }
  // When a timer may fire at the earliest: its deadline, or, for a
  // deadline past the wheel's last tick, that tick (the wheel clamps
  // deadlines beyond its range to its end, wheel.h).
  std::int64_t EarliestFiring(std::int64_t deadline_ns) const {
    const Wide last = Wide{origin_ns} + Wide{MaxTick()} * tick_ns;
    return static_cast<std::int64_t>(std::min<Wide>(deadline_ns, last));
  }
  std::uint64_t NowTick(std::int64_t now_ns) const {
    const Wide d = Wide{now_ns} - origin_ns;
    if (d <= 0) return 0;
    return static_cast<std::uint64_t>(std::min<Wide>(d / tick_ns, Wide{MaxTick()}));
  }
};

// An interval or tick: 1 ns to a second, or any up to about 18 minutes.
inline std::int64_t DecodeTick(FuzzSource& in) {
  static constexpr std::int64_t kTicks[] = {1, 1000, 1'000'000, 7'000'000, 1'000'000'000};
  return in.Uniform(0, 4) == 0 ? in.Uniform(1, std::int64_t{1} << 40) : in.Pick(kTicks);
}

// A delay for a timer: <= 0 (due at once), within a tick, a few or many
// ticks, or anything up to Duration::max().
inline std::int64_t DecodeDelay(FuzzSource& in, std::int64_t tick_ns) {
  const auto ticks = [&](std::int64_t n) {
    return static_cast<std::int64_t>(std::min<Wide>(Wide{n} * tick_ns, kMaxNs));
  };
  switch (in.Uniform(0, 7)) {
    case 0:
      return in.Bool() ? std::numeric_limits<std::int64_t>::min() : -in.Uniform(0, 1'000'000);
    case 1:
      return in.Uniform(1, tick_ns);
    case 2:
    case 3:
      return in.Uniform(1, ticks(5));
    case 4:
    case 5:
      return in.Uniform(1, ticks(300));
    case 6:
      return ticks(in.Uniform(1, 100));  // exactly on a tick
    default:
      return in.Bool() ? kMaxNs : in.Uniform(1, kMaxNs);
  }
}

// A step of the manual clock, > 0, keeping time below kTimeLimitNs.
inline std::int64_t DecodeStep(FuzzSource& in, std::int64_t tick_ns, std::int64_t now_ns) {
  const auto ticks = [&](std::int64_t n) {
    return static_cast<std::int64_t>(std::min<Wide>(Wide{n} * tick_ns, kTimeLimitNs));
  };
  std::int64_t step = 0;
  switch (in.Uniform(0, 5)) {
    case 0:
      step = in.Uniform(1, tick_ns);
      break;
    case 1:
    case 2:
      step = in.Uniform(1, ticks(4));
      break;
    case 3:
      step = ticks(in.Uniform(1, 10));
      break;
    case 4:
      step = in.Uniform(1, ticks(400));
      break;
    default:
      step = in.Uniform(1, std::int64_t{1} << 50);
      break;
  }
  return std::max<std::int64_t>(1, std::min(step, kTimeLimitNs - now_ns));
}

// What callbacks did, in the order they did it, for the fuzzer's thread to
// look at once the runtime has settled.
template <typename Event>
class CallbackLog {
 public:
  void Record(Event e) {
    {
      std::lock_guard lock(mutex_);
      events_.push_back(std::move(e));
    }
    cv_.notify_all();
  }
  // Waits until `done(events)`; fails the input after 30 s (a hang).
  template <typename Pred>
  void WaitUntil(Pred done, const char* what) {
    std::unique_lock lock(mutex_);
    if (!cv_.wait_for(lock, std::chrono::seconds(30), [&] { return done(events_); })) {
      FuzzFail(std::string("waited 30 s for ") + what);
    }
  }
  std::vector<Event> Since(std::size_t from) const {
    std::lock_guard lock(mutex_);
    return std::vector<Event>(events_.begin() + static_cast<std::ptrdiff_t>(from),
                              events_.end());
  }
  std::size_t size() const {
    std::lock_guard lock(mutex_);
    return events_.size();
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<Event> events_;
};

}  // namespace tickwheel::testing

#endif  // TICKWHEEL_TESTS_FUZZ_RUNTIME_FUZZ_H_
