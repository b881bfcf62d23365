// SPDX-License-Identifier: Apache-2.0
// ServerClock: the two clocks the server needs. Timers are persisted in wall
// clock time (Unix milliseconds, comparable across restarts and machines);
// waiting happens on the steady clock (tickwheel::Clock), which never jumps.
// The scheduler, dispatcher and retention take a ServerClock&, so their tests
// run on a ManualServerClock instead of waiting on real time.
#ifndef TICKWHEEL_SERVER_COMMON_SERVER_CLOCK_H_
#define TICKWHEEL_SERVER_COMMON_SERVER_CLOCK_H_

#include <atomic>
#include <cstdint>

#include "tickwheel/clock.h"
#include "tickwheel/time.h"

namespace tickwheel::server {

// Thread safety: all methods may be called from any thread.
class ServerClock {
 public:
  virtual ~ServerClock() = default;

  // Wall-clock time now, in Unix milliseconds.
  virtual std::int64_t WallMs() const = 0;
  // The steady clock, for sleeping and for the in-memory wheel.
  virtual Clock& steady() = 0;

  // The steady time at which the wall clock will read `unix_ms`, as far as
  // can be told now. Rounds up, so a timer armed at the result does not fire
  // before the wall clock reaches `unix_ms` (unless the wall clock is stepped
  // back later: the claim re-checks the wall clock).
  TimePoint SteadyAt(std::int64_t unix_ms);
};

// The system's clocks: std::chrono::system_clock and SystemClock::Instance().
class SystemServerClock final : public ServerClock {
 public:
  static SystemServerClock& Instance();
  std::int64_t WallMs() const override;
  Clock& steady() override;
};

// Both clocks move together, only when told to (ManualClock's contract:
// Advance returns once every sleeper has settled). StepWall moves the wall
// clock alone, as NTP stepping the system clock would: the steady clock and
// its sleepers are not touched.
//
//   ManualServerClock clock(1'800'000'000'000);   // wall clock at the start
//   Scheduler scheduler(store, clock, ...);
//   clock.Advance(std::chrono::seconds(1));
//   clock.StepWall(-500);                         // wall clock 500 ms back
class ManualServerClock final : public ServerClock {
 public:
  explicit ManualServerClock(std::int64_t wall_ms_at_start);
  std::int64_t WallMs() const override;
  Clock& steady() override { return steady_; }
  ManualClock& manual() { return steady_; }
  void Advance(Duration d) { steady_.Advance(d); }
  // Moves the wall clock by `delta_ms` (negative: back), steady time staying.
  void StepWall(std::int64_t delta_ms) { wall_step_ms_.fetch_add(delta_ms); }

 private:
  ManualClock steady_;
  const TimePoint start_;
  const std::int64_t wall_ms_at_start_;
  std::atomic<std::int64_t> wall_step_ms_{0};  // the sum of the StepWall calls
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_COMMON_SERVER_CLOCK_H_
