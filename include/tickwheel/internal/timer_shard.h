// SPDX-License-Identifier: Apache-2.0
// One shard of a TimerService: its timers' entries, their life from pending
// to run, and the wheel that times them.
#ifndef TICKWHEEL_INTERNAL_TIMER_SHARD_H_
#define TICKWHEEL_INTERNAL_TIMER_SHARD_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <vector>

#include "tickwheel/time.h"
#include "tickwheel/timer_id.h"
#include "tickwheel/wheel.h"

namespace tickwheel::internal {

// The life of a timer's entry:
//   kPending --fires--> kQueued --worker takes it (TakeToRun)-->
//     one-shot: freed; repeat: kRunning
//   kRunning --run ends (FinishRun)--> kPending (re-armed), or freed if it
//     was cancelled (kRunningCancelled), or kRearming if re-arming ran out
//     of memory: then the next Advance re-arms it (kPending) for the run
//     FinishRun chose (which runs at once if its time has passed), or frees
//     it if it was cancelled meanwhile (kRearmCancelled).
// Cancel frees kPending and kQueued entries at once (a queued item then
// finds the generation changed and does nothing).
enum class TimerState : std::uint8_t {
  kFree,
  kPending,
  kQueued,
  kRunning,
  kRunningCancelled,
  kRearming,
  kRearmCancelled,
};

struct TimerEntry {
  std::function<void()> fn;  // moved out while a repeat runs
  Duration period{0};        // > 0: repeating
  TimePoint next_run;        // repeating: the run this entry stands for
  TimerId wheel_id;          // valid while kPending
  // Bumped when the entry is freed or its ids go stale; an index whose
  // generation wraps to 0 is retired for good.
  std::uint32_t generation = 1;
  TimerState state = TimerState::kFree;
  // Reschedule set next_run during a run, or while kRearming: the next run
  // is then at next_run (at once if that has passed), not a period on.
  bool moved = false;
  // The free list's link while kFree; the re-arm list's while kRearming or
  // kRearmCancelled.
  std::uint32_t next = 0;
};

// TimerShard holds one shard's timers of a TimerService: entries in a
// vector with a free list, and a Wheel whose payload is the entry's index.
// Ids carry the shard in the low part of the index (index * shards + shard),
// so that any id finds its shard. It is the State of TimerService's
// ShardedRuntime.
//
// Callbacks never die here: those a call lets go are moved into the
// caller's `dropped`/`fn`, for the caller to destroy after unlocking.
// Thread safety: none; the owner's shard lock guards it.
// Exceptions: Add and Reschedule either happen or throw (std::bad_alloc,
// or std::length_error when ids run out) having changed nothing; the
// others do not throw, except Advance (see there).
struct TimerShard {
  using Callback = std::function<void()>;
  static constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();

  // What the shard hands to the workers: the timer, and when it was due (so
  // that the runtime can order what several shards fired).
  struct Fired {
    TimerId id;
    TimePoint due;
  };
  // What a worker does with a timer it was handed.
  enum class Start {
    kNothing,  // cancelled, rescheduled or stopped since it fired
    kOnce,     // run `fn` once; the timer is gone
    kRepeat,   // run `fn`, then FinishRun
  };

  TimerShard(Duration tick, TimePoint origin, std::size_t shard_index,
             std::size_t shard_count)
      : index(shard_index), shards(shard_count), wheel(tick, origin) {}

  // Adds a timer due at `deadline` (repeating every `period` if > 0) and
  // returns its id; moves from `fn` only if it succeeds.
  TimerId Add(TimePoint deadline, Duration period, Callback& fn);

  // Stops the timer `id` names: true if it will not start again (pending,
  // queued, a repeat running or waiting to be re-armed). Its callback, if
  // this lets it go, is moved into `dropped`.
  bool Cancel(TimerId id, Callback& dropped) noexcept;

  // Moves the timer to `deadline` (a repeat's phase to `run_at`). False if
  // it is not pending, as for Cancel.
  bool Reschedule(TimerId id, TimePoint deadline, TimePoint run_at);

  // The worker's first step for a timer it was handed: moves its callback
  // into `fn`. A one-shot is freed then.
  Start TakeToRun(TimerId id, Callback& fn) noexcept;

  // After a repeat's run, started by TakeToRun(id): puts `fn` back and arms
  // the next run (at next_run if Reschedule moved it during the run, else
  // the next period, skipping missed ones); or frees the entry if it was
  // cancelled, leaving `fn` with the caller.
  struct Finished {
    std::optional<TimePoint> armed_at;  // the next run, if armed
    // Arming ran out of memory: the repeat is listed, and the next Advance
    // arms it (it is never lost); the owner wakes the timer thread.
    bool out_of_memory = false;
  };
  Finished FinishRun(TimerId id, Callback& fn, TimePoint now) noexcept;

  // The runtime's step: arms the listed repeats, then queues the fired
  // timers into `fired` and returns the earliest pending deadline. If it
  // throws (out of memory), what it took out of the wheel is in `fired`,
  // and what is left stays pending or listed for the next call.
  std::optional<TimePoint> Advance(TimePoint now, std::vector<Fired>& fired);

  // Stop: destroys every callback. Called with no lock held, once nothing
  // else touches the shard (see ShardedRuntime).
  void Discard() noexcept;

  // Timers that will still run.
  std::size_t live() const { return live_count; }

  // The time a TimerId names, decoded.
  std::uint32_t IndexOf(TimerId id) const {
    return static_cast<std::uint32_t>(TimerIdCodec::Index(id) / shards);
  }
  static std::size_t ShardOf(TimerId id, std::size_t shards) {
    return TimerIdCodec::Index(id) % shards;
  }

  // The first run of a repeat after `now`, keeping the phase of `next`.
  static TimePoint FirstRunAfter(TimePoint next, Duration period,
                                 TimePoint now);

  // The live entry `id` names, or nullptr.
  TimerEntry* Find(TimerId id);
  TimerId MakeId(std::uint32_t i) const {
    return TimerIdCodec::Make(
        static_cast<std::uint32_t>(i * shards + index), entries[i].generation);
  }
  std::uint32_t Allocate();
  // Frees entry `i`, moving its callback into `fn`.
  void Free(std::uint32_t i, Callback& fn) noexcept;
  // Makes every id of entry `i` stale while it stays allocated.
  void Stale(std::uint32_t i) noexcept;
  // Arms repeat `i` at its next_run; out of memory, lists it and throws.
  void Arm(std::uint32_t i);
  // Arms the listed repeats, each at its next_run (a time that has passed
  // fires at once, once), and frees the cancelled ones. Out of memory, what
  // is left stays listed and it throws.
  void RetryRearms();

  const std::size_t index;   // of this shard
  const std::size_t shards;  // in the service
  Wheel<std::uint32_t> wheel;
  std::vector<TimerEntry> entries;
  std::uint32_t free_head = kNone;
  std::uint32_t rearm_head = kNone;  // repeats waiting to be re-armed
  std::size_t live_count = 0;        // timers that will still run
};

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_INTERNAL_TIMER_SHARD_H_
