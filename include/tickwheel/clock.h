// SPDX-License-Identifier: Apache-2.0
// Clocks: the only place tickwheel's runtime learns the time or waits for it.
#ifndef TICKWHEEL_CLOCK_H_
#define TICKWHEEL_CLOCK_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "tickwheel/internal/mutex.h"
#include "tickwheel/time.h"

namespace tickwheel {

// A Sleeper lets one thread wait until a clock reaches a deadline or until
// another thread wakes it. Wake-ups are never lost: read token() before
// deciding to sleep, and SleepUntil returns at once if Wake() was called
// since.
//
//   std::uint64_t token = sleeper->token();   // under your lock
//   ... decide the deadline, release your lock ...
//   sleeper->SleepUntil(deadline, token);
//
// Thread safety: Wake and token may be called from any thread; SleepUntil by
// one thread at a time.
class Sleeper {
 public:
  virtual ~Sleeper() = default;

  // The number of Wake() calls so far.
  virtual std::uint64_t token() const = 0;

  // Returns when the clock reads at least `deadline`, or token() differs from
  // `token`; it may also return early for no reason (callers loop).
  virtual void SleepUntil(TimePoint deadline, std::uint64_t token) = 0;

  // Makes the current or next SleepUntil with an older token return.
  virtual void Wake() = 0;
};

// Clock tells the time and makes Sleepers that wait on it. The runtime
// (TimingWheel, TimerService, executors, Cache) takes a Clock so that tests
// can drive it with a ManualClock.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimePoint Now() const = 0;
  // REQUIRES: the sleeper is destroyed before the clock.
  virtual std::unique_ptr<Sleeper> NewSleeper() = 0;
};

// The system's monotonic clock (std::chrono::steady_clock). The only code in
// tickwheel that reads the real time.
class SystemClock final : public Clock {
 public:
  // A process-wide instance; the default clock of everything that takes one.
  static SystemClock& Instance();

  TimePoint Now() const override;
  std::unique_ptr<Sleeper> NewSleeper() override;
};

// A clock that moves only when told to, for deterministic tests.
//
// Advance returns once every sleeper of this clock has re-read the new time
// and is blocked again with a deadline after it, or has been destroyed. A
// sleeper counts as busy from its creation until it first blocks, and from
// each wake-up until it blocks again. So after `clock.Advance(d)`, every
// runtime thread driven by this clock has handed out all the work that became
// due (the work itself may still be running on worker threads).
//
// Thread safety: all methods may be called from any thread; Advances are
// serialized. Do not Advance from a thread that a sleeper of this clock needs
// in order to block again (for instance from inside a batch that a flusher
// thread runs before it sleeps): Advance would wait for itself. A sleeper
// that does not settle within 60 s of real time aborts the process with a
// message, so such a mistake fails loudly instead of hanging.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(TimePoint start = TimePoint(std::chrono::hours(1)));
  ~ManualClock() override;

  TimePoint Now() const override;
  // REQUIRES: the sleeper is destroyed before the clock.
  std::unique_ptr<Sleeper> NewSleeper() override;

  // Moves time forward by `d` (a negative `d` moves nothing) or to `t` (an
  // earlier `t` moves nothing), then waits until the sleepers have settled.
  // Time stops at TimePoint::max() - 1 ns: TimePoint::max() stands for
  // "never" (a thread with nothing to wait for sleeps until it), as it does
  // on the system's clock.
  void Advance(Duration d);
  void AdvanceTo(TimePoint t) TW_EXCLUDES(advance_mutex_, mutex_);

 private:
  struct SleeperState;
  class ManualSleeper;

  std::atomic<std::int64_t> now_ns_;
  internal::Mutex advance_mutex_;  // serializes Advance
  internal::Mutex mutex_;
  std::vector<std::shared_ptr<SleeperState>> sleepers_ TW_GUARDED_BY(mutex_);
};

}  // namespace tickwheel

#endif  // TICKWHEEL_CLOCK_H_
