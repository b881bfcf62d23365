// SPDX-License-Identifier: Apache-2.0
// Per-timer callbacks with handles, like the timer API of an event loop.
#ifndef TICKWHEEL_TIMER_SERVICE_H_
#define TICKWHEEL_TIMER_SERVICE_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>

#include "tickwheel/clock.h"
#include "tickwheel/time.h"
#include "tickwheel/timer_id.h"

namespace tickwheel {

struct TimerServiceOptions {
  // Resolution: a timer fires at the first tick at or after its deadline.
  std::chrono::nanoseconds tick = std::chrono::milliseconds(1);
  // Threads that run callbacks. Callbacks of one service run concurrently
  // only if workers > 1; a repeating timer never overlaps itself.
  std::size_t workers = 1;
  // Independent (lock, wheel) shards; a thread adds to the one its id hashes
  // to, so producers rarely contend. 0: 4 per hardware thread, 1 to 64.
  std::size_t shards = 0;
  // nullptr: SystemClock::Instance(). Not owned; must outlive the service.
  Clock* clock = nullptr;
  // Receives what a callback threw, on the worker; must not throw. Empty:
  // the message goes to stderr. The service goes on either way, and
  // callback_errors() counts it.
  std::function<void(std::exception_ptr)> on_error;
};

// TimerService runs callbacks at given times on a pool of worker threads.
// Each timer has a TimerId handle for Cancel and Reschedule.
//
// Guarantees: a callback never runs before its time, and on an idle machine
// within one tick after it. When Cancel returns true the callback will not
// start again (a one-shot timer that is already running cannot be
// cancelled; Cancel of it returns false). Every(period) runs at fixed rate:
// at start + k * period, without drift; when a run overruns or the machine
// stalls, the missed periods are skipped, not run in a burst, and the phase
// is kept.
//
// Locks: no user code runs under a lock of the service. Callbacks and
// on_error run on the workers under none; a callback that Cancel, Stop or
// the end of a one-shot lets go is destroyed after the shard's lock is
// released, so its destructor may call the service.
//
// Failures: After, At, Every and Reschedule either do what they say or
// throw (std::bad_alloc) having changed nothing; Cancel, size, Stop and
// callback_errors never throw. A callback that throws is counted
// (callback_errors), reported to on_error, and the service goes on (a
// repeat is re-armed). Out of memory, the timer thread reports the
// std::bad_alloc to on_error and tries again max(tick, 1 ms) later, and a
// repeat whose re-arm fails after its run is reported and re-armed by the
// timer thread for the run it had (late, once, if the retry comes after
// that run's time, as after a stall): no timer or run of a repeat is lost
// or run twice. (These out-of-memory reports are not callback_errors.)
//
// Thread safety: all methods may be called from any thread, including from
// inside callbacks (they run under no lock of the service).
// Cost: After/At/Every, Cancel and Reschedule O(1) under one shard's lock;
// one background thread sleeps until the next deadline.
//
//   TimerService timers;
//   TimerId id = timers.After(5s, [] { Retry(); });
//   timers.Every(1s, [] { ReportStats(); });
//   timers.Cancel(id);
class TimerService {
 public:
  using Callback = std::function<void()>;

  // Throws std::invalid_argument if options.tick <= 0 or workers == 0.
  explicit TimerService(TimerServiceOptions options = {});
  // Stop(). REQUIRES: not called from inside a callback of this service.
  ~TimerService();

  TimerService(const TimerService&) = delete;
  TimerService& operator=(const TimerService&) = delete;

  // Runs `fn` once, `delay` from now (a delay <= 0: at once), or at `when`
  // (a time in the past: at once). Returns an invalid id once stopped.
  // Throws std::invalid_argument if `fn` is empty.
  TimerId After(Duration delay, Callback fn);
  TimerId At(TimePoint when, Callback fn);

  // Runs `fn` every `period`, first one period from now, until cancelled.
  // Throws std::invalid_argument if `period` <= 0 or `fn` is empty.
  TimerId Every(Duration period, Callback fn);

  // Stops a timer: it will not start again. False if it is not pending (it
  // ran, is running as a one-shot, was cancelled, or the service stopped).
  bool Cancel(TimerId id);

  // Moves a pending timer to `delay` from now. A repeating timer runs then
  // and every period after. False if not pending, as for Cancel.
  bool Reschedule(TimerId id, Duration delay);

  // Timers that will still run: pending one-shots and uncancelled repeats.
  std::size_t size() const;

  // Runs of callbacks that threw, since construction. Each is counted
  // before it is handed to on_error, so on_error sees itself counted.
  std::uint64_t callback_errors() const;

  // Discards every timer that has not started, then waits for running
  // callbacks, except the one Stop is called from. Idempotent, thread-safe.
  void Stop();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tickwheel

#endif  // TICKWHEEL_TIMER_SERVICE_H_
