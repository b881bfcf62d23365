// SPDX-License-Identifier: Apache-2.0
#include "tickwheel/timer_service.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tickwheel/internal/argument_checks.h"
#include "tickwheel/internal/mutex.h"
#include "tickwheel/internal/sharded_runtime.h"
#include "tickwheel/internal/time_math.h"
#include "tickwheel/wheel.h"

namespace tickwheel {
namespace {

constexpr const char* kWho = "TimerService";
constexpr std::uint32_t kNoEntry = std::numeric_limits<std::uint32_t>::max();

// The life of a timer's entry:
//   kPending --fires--> kQueued --worker starts it--> (one-shot) freed
//                                                  \-> (repeat) kRunning
//   kRunning --run ends--> kPending (re-armed), or freed if cancelled
// Cancel frees kPending and kQueued entries at once (a queued item then
// finds the generation changed and does nothing); a kRunning repeat is
// marked kRunningCancelled and freed when its run ends.
enum class EntryState : std::uint8_t {
  kFree,
  kPending,
  kQueued,
  kRunning,
  kRunningCancelled,
};

struct Entry {
  TimerService::Callback fn;  // moved out while a repeat runs
  Duration period{0};         // > 0: repeating
  TimePoint next_run;         // repeating: the run this entry stands for
  TimerId wheel_id;           // valid while kPending
  std::uint32_t generation = 1;
  EntryState state = EntryState::kFree;
  bool moved_while_running = false;  // Reschedule set next_run during a run
  std::uint32_t next_free = 0;
};

// Ids carry the shard in the low part of the index: index * shards + shard
// (Add checks that it fits in 32 bits before using an index).
TimerId MakeId(std::size_t shard, std::uint32_t index, std::uint32_t generation,
               std::size_t shards) {
  return internal::TimerIdCodec::Make(
      static_cast<std::uint32_t>(index * shards + shard), generation);
}

// One shard's timers: entries in a vector with a free list, and a wheel
// whose payload is the entry's index.
struct State {
  State(Duration tick, TimePoint origin, std::size_t shard_index,
        std::size_t shard_count)
      : index(shard_index), shards(shard_count), wheel(tick, origin) {}

  // Fired timers are queued: the worker finds them by id.
  std::optional<TimePoint> Advance(TimePoint now, std::vector<TimerId>& fired) {
    wheel.Advance(now, [&](std::uint32_t i) {
      Entry& e = entries[i];
      e.state = EntryState::kQueued;
      fired.push_back(MakeId(index, i, e.generation, shards));
    });
    return wheel.NextDeadline();
  }

  // Stop: pending and queued timers will never run; running ones are freed
  // when their run ends.
  void Discard() {
    for (std::uint32_t i = 0; i < entries.size(); ++i) {
      Entry& e = entries[i];
      if (e.state == EntryState::kPending) wheel.Cancel(e.wheel_id);
      if (e.state == EntryState::kPending || e.state == EntryState::kQueued) {
        Free(i);
      }
    }
    live = 0;
  }

  std::uint32_t Allocate() {
    if (free_head != kNoEntry) {
      const std::uint32_t i = free_head;
      free_head = entries[i].next_free;
      return i;
    }
    entries.emplace_back();
    return static_cast<std::uint32_t>(entries.size() - 1);
  }

  void Free(std::uint32_t i) {
    Entry& e = entries[i];
    e.fn = nullptr;
    e.state = EntryState::kFree;
    e.moved_while_running = false;
    if (++e.generation == 0) return;  // retire: never reuse this index
    e.next_free = free_head;
    free_head = i;
  }

  // The live entry at `i` that `id` names, or nullptr.
  Entry* Find(std::uint32_t i, TimerId id) {
    if (i >= entries.size()) return nullptr;
    Entry& e = entries[i];
    if (e.generation != internal::TimerIdCodec::Generation(id) ||
        e.state == EntryState::kFree) {
      return nullptr;
    }
    return &e;
  }

  const std::size_t index;   // of this shard
  const std::size_t shards;  // in the service
  Wheel<std::uint32_t> wheel;
  std::vector<Entry> entries;
  std::uint32_t free_head = kNoEntry;
  std::size_t live = 0;  // timers that will still run
};

// The first run of a repeat after `now`, keeping the phase of `next`.
TimePoint FirstRunAfter(TimePoint next, Duration period, TimePoint now) {
  if (next > now) return next;
  // The periods skipped end at or before now, so their sum fits.
  const TimePoint last = next + period * ((now - next) / period);
  return internal::AddSaturated(last, period);
}

}  // namespace

class TimerService::Impl {
 public:
  explicit Impl(TimerServiceOptions options)
      : runtime_(MakeConfig(options), [this](TimerId& id) { Run(id); }) {}

  TimerId Add(TimePoint deadline, Duration period, Callback fn) {
    const std::size_t shard_index = HomeShard();
    Shard& shard = runtime_.shard(shard_index);
    internal::MutexLock lock(shard.mutex);
    if (shard.stopped) return TimerId();
    State& state = shard.state;
    const std::uint32_t index = state.Allocate();
    Entry& e = state.entries[index];
    try {
      CheckIdSpace(index);
      e.wheel_id = state.wheel.Schedule(deadline, index);
    } catch (...) {
      state.Free(index);
      throw;
    }
    e.fn = std::move(fn);
    e.period = period;
    e.next_run = deadline;
    e.state = EntryState::kPending;
    ++state.live;
    runtime_.Notify(deadline);
    return MakeId(shard_index, index, e.generation);
  }

  bool Cancel(TimerId id) {
    if (!id.valid()) return false;
    Shard& shard = ShardOf(id);
    const std::uint32_t index = IndexOf(id);
    internal::MutexLock lock(shard.mutex);
    if (shard.stopped) return false;
    State& state = shard.state;
    Entry* e = state.Find(index, id);
    if (e == nullptr) return false;
    switch (e->state) {
      case EntryState::kPending:
        state.wheel.Cancel(e->wheel_id);
        state.Free(index);
        break;
      case EntryState::kQueued:
        state.Free(index);  // the queued item sees a new generation
        break;
      case EntryState::kRunning:
        e->state = EntryState::kRunningCancelled;
        ++e->generation;  // the id is stale from now on
        break;
      default:
        return false;
    }
    --state.live;
    return true;
  }

  bool Reschedule(TimerId id, Duration delay) {
    if (!id.valid()) return false;
    Shard& shard = ShardOf(id);
    const std::uint32_t index = IndexOf(id);
    const TimePoint now = runtime_.clock().Now();
    // The wheel gets "at once" for delay <= 0; a repeat's phase restarts at
    // the real time of that run.
    const TimePoint deadline = internal::DeadlineAt(now, delay);
    const TimePoint run_at = delay > Duration::zero() ? deadline : now;
    internal::MutexLock lock(shard.mutex);
    if (shard.stopped) return false;
    State& state = shard.state;
    Entry* e = state.Find(index, id);
    if (e == nullptr) return false;
    switch (e->state) {
      case EntryState::kPending:
        state.wheel.Reschedule(e->wheel_id, deadline);
        break;
      case EntryState::kQueued:
        // Back into the wheel; the queued item finds it no longer queued.
        e->wheel_id = state.wheel.Schedule(deadline, index);
        e->state = EntryState::kPending;
        break;
      case EntryState::kRunning:
        e->moved_while_running = true;  // re-armed at next_run after the run
        break;
      default:
        return false;
    }
    e->next_run = run_at;
    runtime_.Notify(deadline);
    return true;
  }

  std::size_t size() const {
    std::size_t total = 0;
    for (std::size_t s = 0; s < runtime_.shard_count(); ++s) {
      Shard& shard = runtime_.shard(s);
      internal::MutexLock lock(shard.mutex);
      total += shard.state.live;
    }
    return total;
  }

  void Stop() { runtime_.Stop(); }

  TimePoint DeadlineAfter(Duration delay) const {
    return runtime_.DeadlineAfter(delay);
  }
  TimePoint Now() const { return runtime_.clock().Now(); }

 private:
  using Runtime = internal::ShardedRuntime<State, TimerId>;
  using Shard = Runtime::Shard;

  static internal::RuntimeConfig MakeConfig(TimerServiceOptions& options) {
    return {.who = kWho,
            .tick = options.tick,
            .tick_name = "tick",
            .shards = options.shards,
            .workers = internal::RequirePositive(options.workers, kWho, "workers"),
            .clock = options.clock,
            .on_error = std::move(options.on_error)};
  }

  // The shard a thread adds to: its id's hash, so producers rarely meet.
  std::size_t HomeShard() const {
    thread_local const std::size_t hash =
        std::hash<std::thread::id>{}(std::this_thread::get_id());
    return runtime_.IndexFor(hash);
  }

  // Ids carry the shard in the low part of the index: index * shards +
  // shard must fit in 32 bits, which Add checks before using an index.
  void CheckIdSpace(std::uint32_t index) const {
    const std::uint64_t shards = runtime_.shard_count();
    if (std::uint64_t{index} * shards + shards >
        std::numeric_limits<std::uint32_t>::max()) {
      throw std::length_error("tickwheel::TimerService: too many timers");
    }
  }
  TimerId MakeId(std::size_t shard, std::uint32_t index,
                 std::uint32_t generation) const {
    return tickwheel::MakeId(shard, index, generation, runtime_.shard_count());
  }

  Shard& ShardOf(TimerId id) const {
    return runtime_.shard(internal::TimerIdCodec::Index(id) %
                          runtime_.shard_count());
  }
  std::uint32_t IndexOf(TimerId id) const {
    return static_cast<std::uint32_t>(internal::TimerIdCodec::Index(id) /
                                      runtime_.shard_count());
  }

  // A worker runs the timer `id` names, if it is still queued.
  void Run(TimerId id) {
    Shard& shard = ShardOf(id);
    const std::uint32_t index = IndexOf(id);
    Callback fn;
    bool repeating;
    {
      internal::MutexLock lock(shard.mutex);
      if (shard.stopped) return;
      State& state = shard.state;
      Entry* e = state.Find(index, id);
      if (e == nullptr || e->state != EntryState::kQueued) return;
      repeating = e->period.count() > 0;
      fn = std::move(e->fn);
      if (repeating) {
        e->state = EntryState::kRunning;
      } else {
        state.Free(index);
        --state.live;
      }
    }
    if (!repeating) {
      fn();
      return;
    }
    struct Rearm {  // runs even if fn throws
      Impl& self;
      Shard& shard;
      std::uint32_t index;
      Callback& fn;
      ~Rearm() { self.Rearm(shard, index, fn); }
    } rearm{*this, shard, index, fn};
    fn();
  }

  // After a repeat's run: arm its next run, or free it if it was cancelled.
  void Rearm(Shard& shard, std::uint32_t index, Callback& fn) {
    const TimePoint now = runtime_.clock().Now();
    internal::MutexLock lock(shard.mutex);
    State& state = shard.state;
    Entry& e = state.entries[index];
    if (e.state == EntryState::kRunningCancelled || shard.stopped) {
      state.Free(index);  // Cancel or Stop already took it out of `live`
      return;
    }
    e.fn = std::move(fn);
    if (!e.moved_while_running) e.next_run = internal::AddSaturated(e.next_run, e.period);
    e.moved_while_running = false;
    e.next_run = FirstRunAfter(e.next_run, e.period, now);
    e.wheel_id = state.wheel.Schedule(e.next_run, index);
    e.state = EntryState::kPending;
    runtime_.Notify(e.next_run);
  }

  Runtime runtime_;
};

TimerService::TimerService(TimerServiceOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}

TimerService::~TimerService() { Stop(); }

TimerId TimerService::After(Duration delay, Callback fn) {
  fn = internal::RequireCallable(std::move(fn), kWho, "fn");
  return impl_->Add(impl_->DeadlineAfter(delay), Duration::zero(),
                    std::move(fn));
}

TimerId TimerService::At(TimePoint when, Callback fn) {
  fn = internal::RequireCallable(std::move(fn), kWho, "fn");
  return impl_->Add(when, Duration::zero(), std::move(fn));
}

TimerId TimerService::Every(Duration period, Callback fn) {
  internal::RequirePositive(period, kWho, "period");
  fn = internal::RequireCallable(std::move(fn), kWho, "fn");
  return impl_->Add(internal::DeadlineAt(impl_->Now(), period), period,
                    std::move(fn));
}

bool TimerService::Cancel(TimerId id) { return impl_->Cancel(id); }

bool TimerService::Reschedule(TimerId id, Duration delay) {
  return impl_->Reschedule(id, delay);
}

std::size_t TimerService::size() const { return impl_->size(); }

void TimerService::Stop() { impl_->Stop(); }

}  // namespace tickwheel
