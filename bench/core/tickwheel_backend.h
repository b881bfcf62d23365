// SPDX-License-Identifier: Apache-2.0
// tickwheel::Wheel<uint32_t> (1 ms tick), driven tickless: the loop sleeps
// until NextDeadline() and calls Advance.
#ifndef TICKWHEEL_BENCH_CORE_TICKWHEEL_BACKEND_H_
#define TICKWHEEL_BENCH_CORE_TICKWHEEL_BACKEND_H_

#include <chrono>
#include <cstdint>
#include <vector>

#include "backend.h"
#include "bench_clock.h"
#include "fire_log.h"
#include "tickwheel/wheel.h"

namespace tickwheel::bench {

class TickwheelBackend {
 public:
  static constexpr const char* kName = "tickwheel";

  static constexpr std::size_t kHarnessBytesPerTimer = sizeof(TimerId);

  // kPrefault: Wheel::Reserve(capacity) grows and touches the slab.
  TickwheelBackend(std::size_t capacity, std::int64_t now_ns, Storage storage)
      : wheel_(std::chrono::milliseconds(1), At(now_ns)), ids_(capacity) {
    if (storage == Storage::kPrefault) wheel_.Reserve(capacity);
  }

  void SetNow(std::int64_t) {}
  void Insert(std::uint32_t id, std::int64_t deadline_ns) {
    ids_[id] = wheel_.Schedule(At(deadline_ns), id);
  }
  void Move(std::uint32_t id, std::int64_t deadline_ns) {
    wheel_.Reschedule(ids_[id], At(deadline_ns));
  }
  void Cancel(std::uint32_t id) { wheel_.Cancel(ids_[id]); }

  bool RunOnce(FireLog& log) {
    const auto next = wheel_.NextDeadline();
    if (!next) return false;
    SleepUntilNs(next->time_since_epoch().count());
    wheel_.Advance(At(NowNs()), [&log](std::uint32_t id) { log.Append(id); });
    return true;
  }

 private:
  static TimePoint At(std::int64_t ns) { return TimePoint(Duration(ns)); }

  Wheel<std::uint32_t> wheel_;
  std::vector<TimerId> ids_;
};

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_BENCH_CORE_TICKWHEEL_BACKEND_H_
