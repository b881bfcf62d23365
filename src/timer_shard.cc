// SPDX-License-Identifier: Apache-2.0
#include "tickwheel/internal/timer_shard.h"

#include <cstdint>
#include <stdexcept>
#include <utility>

#include "tickwheel/internal/sharded_runtime.h"
#include "tickwheel/internal/time_math.h"

namespace tickwheel::internal {

TimerId TimerShard::Add(TimePoint deadline, Duration period, Callback& fn) {
  const std::uint32_t i = Allocate();
  TimerEntry& e = entries[i];
  try {
    // index * shards + shard must fit in 32 bits.
    if (std::uint64_t{i} * shards + shards >
        std::numeric_limits<std::uint32_t>::max()) {
      throw std::length_error("tickwheel::TimerService: too many timers");
    }
    e.wheel_id = wheel.Schedule(deadline, i);
  } catch (...) {
    Callback none;
    Free(i, none);
    throw;
  }
  e.fn = std::move(fn);
  e.period = period;
  e.next_run = deadline;
  e.state = TimerState::kPending;
  ++live_count;
  return MakeId(i);
}

bool TimerShard::Cancel(TimerId id, Callback& dropped) noexcept {
  TimerEntry* e = Find(id);
  if (e == nullptr) return false;
  const std::uint32_t i = IndexOf(id);
  switch (e->state) {
    case TimerState::kPending:
      wheel.Cancel(e->wheel_id);
      Free(i, dropped);
      break;
    case TimerState::kQueued:
      Free(i, dropped);  // the queued item finds a new generation
      break;
    case TimerState::kRunning:  // freed when the run ends
      e->state = TimerState::kRunningCancelled;
      Stale(i);
      break;
    case TimerState::kRearming:  // freed by the next Advance
      e->state = TimerState::kRearmCancelled;
      dropped = std::move(e->fn);
      Stale(i);
      break;
    default:
      return false;
  }
  --live_count;
  return true;
}

bool TimerShard::Reschedule(TimerId id, TimePoint deadline, TimePoint run_at) {
  TimerEntry* e = Find(id);
  if (e == nullptr) return false;
  switch (e->state) {
    case TimerState::kPending:
      wheel.Reschedule(e->wheel_id, deadline);  // may throw: not moved
      break;
    case TimerState::kQueued:
      // Back into the wheel; the queued item finds it no longer queued.
      e->wheel_id = wheel.Schedule(deadline, IndexOf(id));  // may throw
      e->state = TimerState::kPending;
      break;
    case TimerState::kRunning:
    case TimerState::kRearming:
      e->moved = true;  // armed at run_at once the run ends (or on retry)
      break;
    default:
      return false;
  }
  e->next_run = run_at;
  return true;
}

TimerShard::Start TimerShard::TakeToRun(TimerId id, Callback& fn) noexcept {
  TimerEntry* e = Find(id);
  if (e == nullptr || e->state != TimerState::kQueued) return Start::kNothing;
  if (e->period.count() > 0) {
    fn = std::move(e->fn);
    e->state = TimerState::kRunning;
    return Start::kRepeat;
  }
  Free(IndexOf(id), fn);
  --live_count;
  return Start::kOnce;
}

TimerShard::Finished TimerShard::FinishRun(TimerId id, Callback& fn,
                                           TimePoint now) noexcept {
  // Not Find: a cancel during the run made `id` stale.
  const std::uint32_t i = IndexOf(id);
  TimerEntry& e = entries[i];
  if (e.state == TimerState::kRunningCancelled) {
    Callback none;
    Free(i, none);  // `fn` stays with the caller; Cancel took it out of live
    return {};
  }
  e.fn = std::move(fn);
  if (!e.moved) {
    e.next_run =
        FirstRunAfter(AddSaturated(e.next_run, e.period), e.period, now);
  }
  try {
    Arm(i);
  } catch (...) {
    return {.out_of_memory = true};  // listed for the next Advance
  }
  return {.armed_at = e.next_run};
}

std::optional<TimePoint> TimerShard::Advance(TimePoint now,
                                             std::vector<Fired>& fired) {
  RetryRearms();
  ReserveOneMore(fired);
  wheel.Advance(now, [&](std::uint32_t i) {
    entries[i].state = TimerState::kQueued;
    fired.push_back({MakeId(i), WheelAccess::FiringDeadline(wheel)});
    ReserveOneMore(fired);  // may throw: this timer is safe in `fired`
  });
  return wheel.NextDeadline();
}

void TimerShard::Discard() noexcept {
  std::vector<TimerEntry> discarded;
  discarded.swap(entries);
  free_head = kNone;
  rearm_head = kNone;
  live_count = 0;
}

TimePoint TimerShard::FirstRunAfter(TimePoint next, Duration period,
                                    TimePoint now) {
  if (next > now) return next;
  // The periods skipped end at or before now, so their sum fits.
  const TimePoint last = next + period * ((now - next) / period);
  return AddSaturated(last, period);
}

TimerEntry* TimerShard::Find(TimerId id) {
  const std::uint32_t i = IndexOf(id);
  if (i >= entries.size()) return nullptr;
  TimerEntry& e = entries[i];
  if (e.generation != TimerIdCodec::Generation(id) ||
      e.state == TimerState::kFree) {
    return nullptr;
  }
  return &e;
}

std::uint32_t TimerShard::Allocate() {
  if (free_head != kNone) {
    const std::uint32_t i = free_head;
    free_head = entries[i].next;
    return i;
  }
  entries.emplace_back();
  return static_cast<std::uint32_t>(entries.size() - 1);
}

void TimerShard::Free(std::uint32_t i, Callback& fn) noexcept {
  TimerEntry& e = entries[i];
  fn = std::move(e.fn);
  e.fn = nullptr;
  e.state = TimerState::kFree;
  e.moved = false;
  // A generation that wrapped to 0 (here, or in Stale) retires the index:
  // no stale id can ever name it again.
  if (e.generation == 0 || ++e.generation == 0) return;
  e.next = free_head;
  free_head = i;
}

void TimerShard::Stale(std::uint32_t i) noexcept {
  // A generation that wraps to 0 stays 0, which no id carries (0 is the
  // invalid id's); Free then retires the index.
  ++entries[i].generation;
}

void TimerShard::Arm(std::uint32_t i) {
  TimerEntry& e = entries[i];
  try {
    e.wheel_id = wheel.Schedule(e.next_run, i);
  } catch (...) {
    e.state = TimerState::kRearming;
    e.next = rearm_head;
    rearm_head = i;
    throw;
  }
  e.state = TimerState::kPending;
  e.moved = false;
}

void TimerShard::RetryRearms() {
  while (rearm_head != kNone) {
    const std::uint32_t i = rearm_head;
    TimerEntry& e = entries[i];
    if (e.state == TimerState::kRearmCancelled) {
      rearm_head = e.next;
      Callback none;
      Free(i, none);  // its callback left when it was cancelled
      continue;
    }
    // next_run is the run FinishRun chose after the last run (or the one
    // Reschedule asked for): armed as it is, it runs on time, or once, late
    // (now), if its time has passed, as a repeat in the wheel would after a
    // stall; FinishRun then skips the periods missed. Skipping to the first
    // period after `now` here lost the run at next_run whenever the retry
    // came at or after it.
    e.wheel_id = wheel.Schedule(e.next_run, i);  // may throw: stays listed
    e.state = TimerState::kPending;
    e.moved = false;
    rearm_head = e.next;
  }
}

}  // namespace tickwheel::internal
