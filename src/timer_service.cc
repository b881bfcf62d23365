#include "tickwheel/timer_service.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tickwheel/internal/time_math.h"
#include "tickwheel/internal/timer_thread.h"
#include "tickwheel/internal/worker_pool.h"
#include "tickwheel/wheel.h"

namespace tickwheel {
namespace {

using internal::TimerIdCodec;

// The life of a timer's entry:
//   kPending --fires--> kQueued --worker starts it--> (one-shot) freed
//                                                  \-> (repeat) kRunning
//   kRunning --run ends--> kPending (re-armed), or freed if cancelled
// Cancel frees kPending and kQueued entries at once (a queued item then
// finds the generation changed and does nothing); a kRunning repeat is
// marked kRunningCancelled and freed when its run ends.
enum class State : std::uint8_t {
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
  State state = State::kFree;
  bool moved_while_running = false;  // Reschedule set next_run during a run
  std::uint32_t next_free = 0;
};

constexpr std::uint32_t kNoEntry = std::numeric_limits<std::uint32_t>::max();

struct Shard {
  Shard(Duration tick, TimePoint origin) : wheel(tick, origin) {}

  std::uint32_t Allocate() {
    if (free_head != kNoEntry) {
      const std::uint32_t index = free_head;
      free_head = entries[index].next_free;
      return index;
    }
    entries.emplace_back();
    return static_cast<std::uint32_t>(entries.size() - 1);
  }

  void Free(std::uint32_t index) {
    Entry& e = entries[index];
    e.fn = nullptr;
    e.state = State::kFree;
    e.moved_while_running = false;
    if (++e.generation == 0) return;  // retire: never reuse this index
    e.next_free = free_head;
    free_head = index;
  }

  std::mutex mutex;
  Wheel<std::uint32_t> wheel;   // payload: entry index; guarded by mutex
  std::vector<Entry> entries;   // guarded by mutex
  std::uint32_t free_head = kNoEntry;  // guarded by mutex
  std::size_t live = 0;         // timers that will still run; guarded
  bool stopped = false;         // guarded by mutex
};

// The first run of a repeat after `now`, keeping the phase of `next`.
// Saturates at TimePoint::max() (never) for periods too long to add.
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
      : clock_(options.clock ? *options.clock : SystemClock::Instance()),
        shards_(MakeShards(options, clock_.Now())),
        pool_(options.workers, [this](TimerId& id) { Run(id); },
              std::move(options.on_error), "TimerService"),
        thread_(clock_, [this](TimePoint now) { return AdvanceAll(now); }) {}

  TimerId Add(TimePoint deadline, Duration period, Callback fn) {
    const std::size_t shard_index = HomeShard();
    Shard& shard = *shards_[shard_index];
    std::lock_guard lock(shard.mutex);
    if (shard.stopped) return TimerId();
    const std::uint32_t index = shard.Allocate();
    Entry& e = shard.entries[index];
    try {
      CheckIdSpace(index);
      e.wheel_id = shard.wheel.Schedule(deadline, index);
    } catch (...) {
      shard.Free(index);
      throw;
    }
    e.fn = std::move(fn);
    e.period = period;
    e.next_run = deadline;
    e.state = State::kPending;
    ++shard.live;
    thread_.Notify(deadline);
    return MakeId(shard_index, index, e.generation);
  }

  bool Cancel(TimerId id) {
    if (!id.valid()) return false;
    Shard* shard = &ShardOf(id);
    const std::uint32_t index = IndexOf(id);
    std::lock_guard lock(shard->mutex);
    Entry* e = Find(*shard, index, id);
    if (e == nullptr) return false;
    switch (e->state) {
      case State::kPending:
        shard->wheel.Cancel(e->wheel_id);
        shard->Free(index);
        break;
      case State::kQueued:
        shard->Free(index);  // the queued item sees a new generation
        break;
      case State::kRunning:
        e->state = State::kRunningCancelled;
        ++e->generation;  // the id is stale from now on
        break;
      default:
        return false;
    }
    --shard->live;
    return true;
  }

  bool Reschedule(TimerId id, Duration delay) {
    if (!id.valid()) return false;
    Shard* shard = &ShardOf(id);
    const std::uint32_t index = IndexOf(id);
    const TimePoint now = clock_.Now();
    // The wheel gets "at once" for delay <= 0; a repeat's phase restarts at
    // the real time of that run.
    const TimePoint deadline =
        delay.count() <= 0 ? TimePoint::min() : internal::AddSaturated(now, delay);
    const TimePoint run_at =
        internal::AddSaturated(now, std::max(delay, Duration::zero()));
    std::lock_guard lock(shard->mutex);
    Entry* e = Find(*shard, index, id);
    if (e == nullptr) return false;
    switch (e->state) {
      case State::kPending:
        shard->wheel.Reschedule(e->wheel_id, deadline);
        break;
      case State::kQueued:
        // Back into the wheel; the queued item finds it no longer queued.
        e->wheel_id = shard->wheel.Schedule(deadline, index);
        e->state = State::kPending;
        break;
      case State::kRunning:
        e->moved_while_running = true;  // re-armed at next_run after the run
        break;
      default:
        return false;
    }
    e->next_run = run_at;
    thread_.Notify(deadline);
    return true;
  }

  std::size_t size() const {
    std::size_t total = 0;
    for (const auto& shard : shards_) {
      std::lock_guard lock(shard->mutex);
      total += shard->live;
    }
    return total;
  }

  void Stop() {
    {
      std::lock_guard stop_lock(stop_mutex_);
      for (const auto& shard : shards_) {
        std::lock_guard lock(shard->mutex);
        shard->stopped = true;
      }
      thread_.Stop();
      for (const auto& shard : shards_) {
        std::lock_guard lock(shard->mutex);
        for (std::uint32_t i = 0; i < shard->entries.size(); ++i) {
          Entry& e = shard->entries[i];
          if (e.state == State::kPending) shard->wheel.Cancel(e.wheel_id);
          if (e.state == State::kPending || e.state == State::kQueued) {
            shard->Free(i);
          }
        }
        shard->live = 0;
      }
    }
    pool_.Stop();  // not under stop_mutex_: see TimingWheel::Stop
  }

  TimePoint DeadlineAfter(Duration delay) const {
    return delay.count() <= 0 ? TimePoint::min()
                              : internal::AddSaturated(clock_.Now(), delay);
  }
  TimePoint Now() const { return clock_.Now(); }

 private:
  static std::vector<std::unique_ptr<Shard>> MakeShards(
      const TimerServiceOptions& options, TimePoint origin) {
    if (options.tick.count() <= 0) {
      throw std::invalid_argument("TimerService: tick must be positive, got " +
                                  std::to_string(options.tick.count()) + "ns");
    }
    const std::size_t count =
        options.shards != 0
            ? options.shards
            : std::clamp<std::size_t>(4 * std::thread::hardware_concurrency(),
                                      1, 64);
    std::vector<std::unique_ptr<Shard>> shards;
    for (std::size_t i = 0; i < count; ++i) {
      shards.push_back(std::make_unique<Shard>(options.tick, origin));
    }
    return shards;
  }

  std::size_t HomeShard() const {
    thread_local const std::size_t seed =
        std::hash<std::thread::id>{}(std::this_thread::get_id()) *
        0x9e3779b97f4a7c15ULL;
    return (seed >> 32) % shards_.size();
  }

  // Ids carry the shard in the low part of the index: index * shards +
  // shard must fit in 32 bits, which Add checks before using an index.
  void CheckIdSpace(std::uint32_t index) const {
    if (std::uint64_t{index} * shards_.size() + shards_.size() >
        std::numeric_limits<std::uint32_t>::max()) {
      throw std::length_error("TimerService: too many timers");
    }
  }
  TimerId MakeId(std::size_t shard, std::uint32_t index,
                 std::uint32_t generation) const {
    return TimerIdCodec::Make(
        static_cast<std::uint32_t>(index * shards_.size() + shard),
        generation);
  }

  Shard& ShardOf(TimerId id) const {
    return *shards_[TimerIdCodec::Index(id) % shards_.size()];
  }
  std::uint32_t IndexOf(TimerId id) const {
    return static_cast<std::uint32_t>(TimerIdCodec::Index(id) /
                                      shards_.size());
  }

  // The live entry `id` names, or nullptr. REQUIRES: shard.mutex held.
  static Entry* Find(Shard& shard, std::uint32_t index, TimerId id) {
    if (shard.stopped || index >= shard.entries.size()) return nullptr;
    Entry& e = shard.entries[index];
    if (e.generation != TimerIdCodec::Generation(id) ||
        e.state == State::kFree) {
      return nullptr;
    }
    return &e;
  }

  std::optional<TimePoint> AdvanceAll(TimePoint now) {
    std::vector<TimerId> due;
    std::optional<TimePoint> next;
    for (std::size_t s = 0; s < shards_.size(); ++s) {
      Shard& shard = *shards_[s];
      std::lock_guard lock(shard.mutex);
      shard.wheel.Advance(now, [&](std::uint32_t index) {
        Entry& e = shard.entries[index];
        e.state = State::kQueued;
        due.push_back(MakeId(s, index, e.generation));
      });
      if (auto shard_next = shard.wheel.NextDeadline()) {
        if (!next || *shard_next < *next) next = shard_next;
      }
    }
    pool_.SubmitAll(due);
    return next;
  }

  // A worker runs the timer `id` names, if it is still queued.
  void Run(TimerId id) {
    Shard* shard = &ShardOf(id);
    const std::uint32_t index = IndexOf(id);
    Callback fn;
    bool repeating;
    {
      std::lock_guard lock(shard->mutex);
      Entry* e = Find(*shard, index, id);
      if (e == nullptr || e->state != State::kQueued) return;
      repeating = e->period.count() > 0;
      fn = std::move(e->fn);
      if (repeating) {
        e->state = State::kRunning;
      } else {
        shard->Free(index);
        --shard->live;
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
    } rearm{*this, *shard, index, fn};
    fn();
  }

  // After a repeat's run: arm its next run, or free it if it was cancelled.
  void Rearm(Shard& shard, std::uint32_t index, Callback& fn) {
    const TimePoint now = clock_.Now();
    std::lock_guard lock(shard.mutex);
    Entry& e = shard.entries[index];
    if (e.state == State::kRunningCancelled || shard.stopped) {
      shard.Free(index);  // Cancel or Stop already took it out of `live`
      return;
    }
    e.fn = std::move(fn);
    if (!e.moved_while_running) {
      e.next_run = internal::AddSaturated(e.next_run, e.period);
    }
    e.moved_while_running = false;
    e.next_run = FirstRunAfter(e.next_run, e.period, now);
    e.wheel_id = shard.wheel.Schedule(e.next_run, index);
    e.state = State::kPending;
    thread_.Notify(e.next_run);
  }

  Clock& clock_;
  const std::vector<std::unique_ptr<Shard>> shards_;
  internal::WorkerPool<TimerId> pool_;
  std::mutex stop_mutex_;  // serializes the first half of Stop
  internal::TimerThread thread_;  // last: starts once everything exists
};

TimerService::TimerService(TimerServiceOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}

TimerService::~TimerService() { Stop(); }

TimerId TimerService::After(Duration delay, Callback fn) {
  if (!fn) throw std::invalid_argument("TimerService::After: fn is empty");
  return impl_->Add(impl_->DeadlineAfter(delay), Duration::zero(),
                    std::move(fn));
}

TimerId TimerService::At(TimePoint when, Callback fn) {
  if (!fn) throw std::invalid_argument("TimerService::At: fn is empty");
  return impl_->Add(when, Duration::zero(), std::move(fn));
}

TimerId TimerService::Every(Duration period, Callback fn) {
  if (period.count() <= 0) {
    throw std::invalid_argument(
        "TimerService::Every: period must be positive, got " +
        std::to_string(period.count()) + "ns");
  }
  if (!fn) throw std::invalid_argument("TimerService::Every: fn is empty");
  return impl_->Add(internal::AddSaturated(impl_->Now(), period), period,
                    std::move(fn));
}

bool TimerService::Cancel(TimerId id) { return impl_->Cancel(id); }

bool TimerService::Reschedule(TimerId id, Duration delay) {
  return impl_->Reschedule(id, delay);
}

std::size_t TimerService::size() const { return impl_->size(); }

void TimerService::Stop() { impl_->Stop(); }

}  // namespace tickwheel
