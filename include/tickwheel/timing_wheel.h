// A keyed, thread-safe timing wheel: go-zero's TimingWheel done right.
#ifndef TICKWHEEL_TIMING_WHEEL_H_
#define TICKWHEEL_TIMING_WHEEL_H_

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "tickwheel/clock.h"
#include "tickwheel/internal/flat_map.h"
#include "tickwheel/internal/time_math.h"
#include "tickwheel/internal/timer_thread.h"
#include "tickwheel/internal/worker_pool.h"
#include "tickwheel/time.h"
#include "tickwheel/wheel.h"

namespace tickwheel {

struct TimingWheelOptions {
  // Threads that run `execute`. One slow `execute` delays the others only
  // when all workers are busy.
  std::size_t workers = 1;
  // Independent (lock, wheel, key map) shards, chosen by key hash, so that
  // producers on different keys rarely contend. 0: 4 per hardware thread.
  std::size_t shards = 0;
  // Where time comes from; nullptr means SystemClock::Instance(). Not owned;
  // must outlive the wheel.
  Clock* clock = nullptr;
  // Called on the worker thread with what `execute` threw; must not throw.
  // Empty: the message goes to stderr. Either way the wheel goes on.
  std::function<void(std::exception_ptr)> on_error;
};

// TimingWheel<Key, Value> holds at most one timer per key. When a key's timer
// is due, `execute(key, value)` runs on a worker thread and the key is
// removed. It is the structure behind idle timeouts ("close the connection
// unless a heartbeat moves its timer first") and TTL caches.
//
// Every call is synchronous: when it returns, the change is in effect.
// After RemoveTimer returns true, `execute` is never called for that entry;
// after MoveTimer returns, the timer fires at its new time only. A timer
// fires no earlier than `delay` after the call that set or moved it, and
// within one `interval` after that on an idle machine. A delay <= 0 is due
// at once.
//
// Thread safety: all methods may be called from any thread, including from
// inside `execute` (it runs under no lock of the wheel).
// Cost: SetTimer, MoveTimer, RemoveTimer O(1) (a lookup in an open-addressing
// map and a Wheel operation under one shard's lock); firing a key costs one
// more lookup. One background thread sleeps until the next deadline, never
// ticking through empty time.
// Memory: per key, a map entry (key, value, 8-byte id) in an array at most
// 3/4 full, plus a wheel node holding a copy of the key (24 bytes + key).
// REQUIRES: Key and Value are nothrow-move-constructible and Key is
// copyable.
//
//   TimingWheel<int, Conn*> idle(1s, [](const int& fd, Conn* const& c) {
//     c->Close();
//   });
//   idle.SetTimer(fd, conn, 30s);   // on every heartbeat: idle.MoveTimer(fd, 30s)
template <typename Key, typename Value, typename Hash = std::hash<Key>,
          typename KeyEqual = std::equal_to<Key>>
class TimingWheel {
 public:
  using Execute = std::function<void(const Key&, const Value&)>;

  // `interval` is the wheel's tick: timers fire at the first tick at or after
  // their deadline. Throws std::invalid_argument if `interval` <= 0,
  // `execute` is empty or `options.workers` is 0.
  TimingWheel(Duration interval, Execute execute,
              TimingWheelOptions options = {});
  // Stop(). REQUIRES: not called from inside `execute`.
  ~TimingWheel();

  TimingWheel(const TimingWheel&) = delete;
  TimingWheel& operator=(const TimingWheel&) = delete;

  // New key: schedules it `delay` from now. Existing key: replaces its value
  // and moves its timer to `delay` from now. False once stopped.
  bool SetTimer(const Key& key, Value value, Duration delay);

  // Moves the key's timer to `delay` from now. False if the key has no
  // pending timer, or once stopped.
  bool MoveTimer(const Key& key, Duration delay);

  // Removes the key's timer; `execute` will not run for it. False if the key
  // has no pending timer, or once stopped.
  bool RemoveTimer(const Key& key);

  // Removes every pending timer and calls `fn(key, value)` for each, on the
  // calling thread and under no lock, before returning. False (calling
  // nothing) once stopped.
  bool Drain(const std::function<void(const Key&, const Value&)>& fn);

  // Discards every pending timer and every fired one that has not started to
  // execute, then waits for running `execute` calls to return — except the
  // one Stop is called from, if any. Idempotent and thread-safe.
  void Stop();

  // Pending timers (0 once stopped).
  std::size_t size() const;

 private:
  static_assert(std::is_nothrow_move_constructible_v<Key> &&
                    std::is_nothrow_move_constructible_v<Value>,
                "TimingWheel moves keys and values inside its map");

  struct Entry {
    Value value;
    TimerId timer;
  };
  using Map = internal::FlatMap<Key, Entry, Hash, KeyEqual>;
  // A fired key on its way to `execute`.
  struct Fired {
    Key key;
    Value value;
  };

  // One lock, one wheel and the keys that hash here. The wheel's payload is
  // the key (map entries move, so the wheel cannot point at them).
  struct Shard {
    Shard(Duration tick, TimePoint origin) : wheel(tick, origin) {}
    mutable std::mutex mutex;
    Wheel<Key> wheel;  // guarded by mutex
    Map map;           // guarded by mutex
    bool stopped = false;  // guarded by mutex
  };

  static std::vector<std::unique_ptr<Shard>> MakeShards(std::size_t requested,
                                                       Duration interval,
                                                       TimePoint origin);

  Shard& ShardFor(const Key& key) const {
    // Fibonacci hashing: std::hash of an integer is the integer itself.
    const std::size_t h = Hash{}(key) * 0x9e3779b97f4a7c15ULL;
    return *shards_[(h >> 32) % shards_.size()];
  }
  // A delay <= 0 is due at once: at the next Advance, whatever the rounding.
  // Any delay, up to Duration::max(), works (saturated, never overflows).
  TimePoint DeadlineAfter(Duration delay) const {
    return delay.count() <= 0 ? TimePoint::min()
                              : internal::AddSaturated(clock_.Now(), delay);
  }
  // The TimerThread's step: fires what is due in every shard.
  std::optional<TimePoint> AdvanceAll(TimePoint now);

  Clock& clock_;
  const Execute execute_;
  const std::vector<std::unique_ptr<Shard>> shards_;
  internal::WorkerPool<Fired> pool_;  // runs execute_
  std::mutex stop_mutex_;  // serializes the first half of Stop
  internal::TimerThread thread_;  // last: starts once everything exists
};

// ---------------------------------------------------------------------------
// Implementation.

template <typename Key, typename Value, typename Hash, typename KeyEqual>
auto TimingWheel<Key, Value, Hash, KeyEqual>::MakeShards(std::size_t requested,
                                                         Duration interval,
                                                         TimePoint origin)
    -> std::vector<std::unique_ptr<Shard>> {
  if (interval.count() <= 0) {
    throw std::invalid_argument("TimingWheel: interval must be positive, got " +
                                std::to_string(interval.count()) + "ns");
  }
  const std::size_t count =
      requested != 0 ? requested
                     : std::clamp<std::size_t>(
                           4 * std::thread::hardware_concurrency(), 1, 64);
  std::vector<std::unique_ptr<Shard>> shards;
  shards.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    shards.push_back(std::make_unique<Shard>(interval, origin));
  }
  return shards;
}

template <typename Key, typename Value, typename Hash, typename KeyEqual>
TimingWheel<Key, Value, Hash, KeyEqual>::TimingWheel(Duration interval,
                                                     Execute execute,
                                                     TimingWheelOptions options)
    : clock_(options.clock ? *options.clock : SystemClock::Instance()),
      execute_(execute ? std::move(execute)
                       : throw std::invalid_argument(
                             "TimingWheel: execute must not be empty")),
      shards_(MakeShards(options.shards, interval, clock_.Now())),
      pool_(options.workers,
            [this](Fired& fired) { execute_(fired.key, fired.value); },
            std::move(options.on_error), "TimingWheel"),
      thread_(clock_, [this](TimePoint now) { return AdvanceAll(now); }) {}

template <typename Key, typename Value, typename Hash, typename KeyEqual>
TimingWheel<Key, Value, Hash, KeyEqual>::~TimingWheel() {
  Stop();
}

template <typename Key, typename Value, typename Hash, typename KeyEqual>
bool TimingWheel<Key, Value, Hash, KeyEqual>::SetTimer(const Key& key,
                                                       Value value,
                                                       Duration delay) {
  const TimePoint deadline = DeadlineAfter(delay);
  Shard& shard = ShardFor(key);
  std::lock_guard lock(shard.mutex);
  if (shard.stopped) return false;
  // One lookup: insert, or find the key's entry. `value` is moved only when
  // inserting.
  auto [entry, inserted] = shard.map.TryEmplace(
      key, [&] { return Entry{std::move(value), TimerId()}; });
  if (inserted) {
    try {
      entry->mapped.timer = shard.wheel.Schedule(deadline, key);
    } catch (...) {
      shard.map.Extract(key);
      throw;
    }
  } else {
    shard.wheel.Reschedule(entry->mapped.timer, deadline);
    entry->mapped.value = std::move(value);
  }
  // Under the lock, so that Stop (which takes every shard lock first) never
  // races with a Notify.
  thread_.Notify(deadline);
  return true;
}

template <typename Key, typename Value, typename Hash, typename KeyEqual>
bool TimingWheel<Key, Value, Hash, KeyEqual>::MoveTimer(const Key& key,
                                                        Duration delay) {
  const TimePoint deadline = DeadlineAfter(delay);
  Shard& shard = ShardFor(key);
  std::lock_guard lock(shard.mutex);
  if (shard.stopped) return false;
  typename Map::Entry* entry = shard.map.Find(key);
  if (entry == nullptr) return false;
  shard.wheel.Reschedule(entry->mapped.timer, deadline);
  thread_.Notify(deadline);
  return true;
}

template <typename Key, typename Value, typename Hash, typename KeyEqual>
bool TimingWheel<Key, Value, Hash, KeyEqual>::RemoveTimer(const Key& key) {
  Shard& shard = ShardFor(key);
  std::lock_guard lock(shard.mutex);
  if (shard.stopped) return false;
  std::optional<typename Map::Entry> removed = shard.map.Extract(key);
  if (!removed) return false;
  shard.wheel.Cancel(removed->mapped.timer);
  return true;
}

template <typename Key, typename Value, typename Hash, typename KeyEqual>
bool TimingWheel<Key, Value, Hash, KeyEqual>::Drain(
    const std::function<void(const Key&, const Value&)>& fn) {
  std::vector<Fired> drained;
  for (const std::unique_ptr<Shard>& shard : shards_) {
    std::lock_guard lock(shard->mutex);
    if (shard->stopped) return false;
    drained.reserve(drained.size() + shard->map.size());
    shard->map.ForEach([&](typename Map::Entry& entry) {
      shard->wheel.Cancel(entry.mapped.timer);
      drained.push_back(
          Fired{std::move(entry.key), std::move(entry.mapped.value)});
    });
    shard->map.Clear();
  }
  for (Fired& pair : drained) fn(pair.key, pair.value);
  return true;
}

template <typename Key, typename Value, typename Hash, typename KeyEqual>
std::optional<TimePoint> TimingWheel<Key, Value, Hash, KeyEqual>::AdvanceAll(
    TimePoint now) {
  std::vector<Fired> due;
  std::optional<TimePoint> next;
  for (const std::unique_ptr<Shard>& shard : shards_) {
    std::lock_guard lock(shard->mutex);
    shard->wheel.Advance(now, [&](Key&& key) {
      // The key leaves the map now, under the lock: from here on it is not
      // pending, and RemoveTimer / MoveTimer of it return false.
      std::optional<typename Map::Entry> entry = shard->map.Extract(key);
      due.push_back(Fired{std::move(key), std::move(entry->mapped.value)});
    });
    if (auto shard_next = shard->wheel.NextDeadline()) {
      if (!next || *shard_next < *next) next = shard_next;
    }
  }
  pool_.SubmitAll(due);
  return next;
}

template <typename Key, typename Value, typename Hash, typename KeyEqual>
void TimingWheel<Key, Value, Hash, KeyEqual>::Stop() {
  {
    std::lock_guard stop_lock(stop_mutex_);
    for (const std::unique_ptr<Shard>& shard : shards_) {
      std::lock_guard lock(shard->mutex);
      shard->stopped = true;
    }
    thread_.Stop();
    for (const std::unique_ptr<Shard>& shard : shards_) {
      std::lock_guard lock(shard->mutex);
      shard->map.ForEach([&](typename Map::Entry& entry) {
        shard->wheel.Cancel(entry.mapped.timer);
      });
      shard->map.Clear();
    }
  }
  // Not under stop_mutex_: two execute calls may Stop at once, and each
  // waits here for the other only until both are inside pool_.Stop.
  pool_.Stop();
}

template <typename Key, typename Value, typename Hash, typename KeyEqual>
std::size_t TimingWheel<Key, Value, Hash, KeyEqual>::size() const {
  std::size_t total = 0;
  for (const std::unique_ptr<Shard>& shard : shards_) {
    std::lock_guard lock(shard->mutex);
    total += shard->map.size();
  }
  return total;
}

}  // namespace tickwheel

#endif  // TICKWHEEL_TIMING_WHEEL_H_
