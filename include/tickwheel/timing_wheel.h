// SPDX-License-Identifier: Apache-2.0
// A keyed, thread-safe timing wheel: go-zero's TimingWheel done right.
#ifndef TICKWHEEL_TIMING_WHEEL_H_
#define TICKWHEEL_TIMING_WHEEL_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "tickwheel/clock.h"
#include "tickwheel/internal/argument_checks.h"
#include "tickwheel/internal/keyed_shard.h"
#include "tickwheel/internal/mutex.h"
#include "tickwheel/internal/sharded_runtime.h"
#include "tickwheel/time.h"
#include "tickwheel/wheel.h"

namespace tickwheel {

struct TimingWheelOptions {
  // Threads that run `execute`. One slow `execute` delays the others only
  // when all workers are busy.
  std::size_t workers = 1;
  // Independent (lock, wheel, key map) shards, chosen by key hash, so that
  // producers on different keys rarely contend. 0: 4 per hardware thread,
  // 1 to 64.
  std::size_t shards = 0;
  // Where time comes from; nullptr means SystemClock::Instance(). Not owned;
  // must outlive the wheel.
  Clock* clock = nullptr;
  // Called on the worker thread with what `execute` threw; must not throw.
  // Empty: the message goes to stderr. Either way the wheel goes on, and
  // callback_errors() counts it.
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
// The batch calls (SetTimers, MoveTimers, RemoveTimers) make the same
// change for many keys with one lock per shard instead of one per key, and
// overlap the keys' cache misses: at a million keys a single call waits
// for two misses in turn (map entry, then wheel node), and a batch spreads
// them over many keys at once.
//
// Locks: `execute`, Drain's `fn` and on_error run under no lock of the
// wheel, and a value or key that a call lets go (replaced by SetTimer,
// removed, fired, drained, discarded by Stop) is destroyed after the lock
// is released, so destructors may call the wheel. What does run under a
// shard's lock, and so must not call the wheel: Key's and Value's copy and
// move constructors and assignments (and the destruction of moved-from
// ones), Hash and KeyEqual.
//
// Failures: single calls either do what they say or throw (std::bad_alloc)
// having changed nothing; RemoveTimer, size and Stop never throw. A batch
// call that throws has made each key's call entirely or not at all (which
// ones is unspecified, `results` too), and every call it made wakes the
// timer thread as it should. Drain out of memory takes nothing. An
// `execute` that throws is counted (callback_errors), reported to on_error,
// and the wheel goes on. Out of memory, the timer thread reports the
// std::bad_alloc to on_error (not counted as a callback error) and tries
// again max(interval, 1 ms) later: no key is lost or fired twice.
//
// Thread safety: all methods may be called from any thread, including from
// inside `execute` (it runs under no lock of the wheel).
// Cost: SetTimer, MoveTimer, RemoveTimer O(1) (a lookup in an open-addressing
// map and a Wheel operation under one shard's lock); batch calls O(n) plus
// O(shards). Firing a key costs one more lookup. One background thread
// sleeps until the next deadline, never ticking through empty time.
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
  ~TimingWheel() { Stop(); }

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

  // Batch calls: the single call for every element, in order (a key listed
  // twice gets both calls, in turn). The clock is read once, at the start.
  // Each key's change takes effect atomically, as the single call's does;
  // the batch as a whole does not (another thread may find some keys
  // changed and others not yet). Returns how many of the calls returned
  // true; `results`, if not empty, gets each call's result. Throws
  // std::invalid_argument if the spans differ in size.
  //
  // SetTimer(keys[i], std::move(values[i]), delays[i]) for each i.
  std::size_t SetTimers(std::span<const Key> keys, std::span<Value> values,
                        std::span<const Duration> delays);
  // MoveTimer(keys[i], delays[i]) for each i; or with one delay for all (a
  // batch of heartbeats).
  std::size_t MoveTimers(std::span<const Key> keys,
                         std::span<const Duration> delays,
                         std::span<bool> results = {});
  std::size_t MoveTimers(std::span<const Key> keys, Duration delay,
                         std::span<bool> results = {});
  // RemoveTimer(keys[i]) for each i.
  std::size_t RemoveTimers(std::span<const Key> keys,
                           std::span<bool> results = {});

  // Removes every pending timer and calls `fn(key, value)` for each, on the
  // calling thread and under no lock, before returning. False (calling
  // nothing) once stopped.
  bool Drain(const std::function<void(const Key&, const Value&)>& fn);

  // Discards every pending timer and every fired one that has not started to
  // execute, then waits for running `execute` calls to return — except the
  // one Stop is called from, if any. Idempotent and thread-safe.
  void Stop() { runtime_.Stop(); }

  // Pending timers (0 once stopped).
  std::size_t size() const;

  // Calls of `execute` that threw, since construction. Each is counted
  // before it is handed to on_error. (What Drain's `fn` throws reaches
  // Drain's caller and is not counted.) Never throws.
  std::uint64_t callback_errors() const { return runtime_.callback_errors(); }

 private:
  static_assert(std::is_nothrow_move_constructible_v<Key> &&
                    std::is_nothrow_move_constructible_v<Value>,
                "TimingWheel moves keys and values inside its map");
  static constexpr const char* kWho = "TimingWheel";
  // A batch works on this many keys of a shard at a time: their map lines,
  // then their wheel nodes, are loaded together before any is used.
  static constexpr std::size_t kBatchWindow = 32;

  using State = internal::KeyedShard<Key, Value, Hash, KeyEqual>;
  using Fired = typename State::Fired;
  using Runtime = internal::ShardedRuntime<State, Fired>;

  static internal::RuntimeConfig MakeConfig(Duration interval,
                                            TimingWheelOptions& options);

  // What the map part of a batched call found: its result, and the timer
  // its wheel part works on (invalid: none).
  struct MapStep {
    bool result;
    TimerId timer;
  };

  // Makes call i for each i in [0, keys.size()), grouped by shard under one
  // lock each, in order within a shard, in windows of kBatchWindow keys and
  // three passes over each: their map lines are loaded together; then
  // `map_part(state, i)` runs for each (a MapStep), and the wheel nodes it
  // names are loaded together; then `wheel_part(state, i, timer)` runs for
  // each that named one. So the cache misses of a window's keys overlap,
  // where single calls wait for a map miss and then a node miss each.
  // `deadline(i)` is the deadline call i sets, if any (for Notify).
  // Writes results; returns how many were true. If a part throws, the wheel
  // parts of the window's earlier calls run, then the exception propagates.
  template <typename MapPart, typename WheelPart, typename DeadlineOf>
  std::size_t Batch(std::span<const Key> keys, std::span<bool> results,
                    MapPart map_part, WheelPart wheel_part,
                    DeadlineOf deadline) TW_NO_THREAD_SAFETY_ANALYSIS;

  // Drain's first half: with every shard locked, moves every pending key
  // and value into `drained` and the timers' copies of the keys into
  // `wheel_keys` (destroyed by the caller after the unlock). False, taking
  // nothing, if a shard is stopped; throws std::bad_alloc, taking nothing.
  bool TakeAll(std::vector<Fired>& drained, std::vector<Key>& wheel_keys)
      TW_NO_THREAD_SAFETY_ANALYSIS;

  const Execute execute_;
  Runtime runtime_;  // last: its threads start once everything exists
};

// ---------------------------------------------------------------------------
// Implementation.

template <typename Key, typename Value, typename Hash, typename KeyEqual>
internal::RuntimeConfig TimingWheel<Key, Value, Hash, KeyEqual>::MakeConfig(
    Duration interval, TimingWheelOptions& options) {
  return {.who = kWho,
          .tick = interval,
          .tick_name = "interval",
          .shards = options.shards,
          .workers = internal::RequirePositive(options.workers, kWho, "workers"),
          .clock = options.clock,
          .on_error = std::move(options.on_error)};
}

template <typename Key, typename Value, typename Hash, typename KeyEqual>
TimingWheel<Key, Value, Hash, KeyEqual>::TimingWheel(Duration interval,
                                                     Execute execute,
                                                     TimingWheelOptions options)
    : execute_(internal::RequireCallable(std::move(execute), kWho, "execute")),
      runtime_(MakeConfig(interval, options),
               [this](Fired& fired) { execute_(fired.key, fired.value); }) {}

template <typename Key, typename Value, typename Hash, typename KeyEqual>
bool TimingWheel<Key, Value, Hash, KeyEqual>::SetTimer(const Key& key,
                                                       Value value,
                                                       Duration delay) {
  const TimePoint deadline = runtime_.DeadlineAfter(delay);
  typename Runtime::Shard& shard = runtime_.ShardFor(Hash{}(key));
  // A replaced value leaves with `value`; both die after the unlock.
  typename State::Garbage garbage;
  internal::MutexLock lock(shard.mutex);
  if (shard.stopped) return false;
  shard.state.Set(key, value, deadline, garbage);
  runtime_.Notify(deadline);
  return true;
}

template <typename Key, typename Value, typename Hash, typename KeyEqual>
bool TimingWheel<Key, Value, Hash, KeyEqual>::MoveTimer(const Key& key,
                                                        Duration delay) {
  const TimePoint deadline = runtime_.DeadlineAfter(delay);
  typename Runtime::Shard& shard = runtime_.ShardFor(Hash{}(key));
  internal::MutexLock lock(shard.mutex);
  if (shard.stopped || !shard.state.Move(key, deadline)) return false;
  runtime_.Notify(deadline);
  return true;
}

template <typename Key, typename Value, typename Hash, typename KeyEqual>
bool TimingWheel<Key, Value, Hash, KeyEqual>::RemoveTimer(const Key& key) {
  typename Runtime::Shard& shard = runtime_.ShardFor(Hash{}(key));
  typename State::Garbage removed;  // destroyed after the unlock
  internal::MutexLock lock(shard.mutex);
  return !shard.stopped && shard.state.Remove(key, removed);
}

template <typename Key, typename Value, typename Hash, typename KeyEqual>
template <typename MapPart, typename WheelPart, typename DeadlineOf>
std::size_t TimingWheel<Key, Value, Hash, KeyEqual>::Batch(
    std::span<const Key> keys, std::span<bool> results, MapPart map_part,
    WheelPart wheel_part, DeadlineOf deadline) TW_NO_THREAD_SAFETY_ANALYSIS {
  // (The analysis cannot follow locks taken hand over hand on shards chosen
  // at run time: every shard's state below is used between its Lock and
  // Unlock, which `held` pairs up, also when a part throws.)
  if (!results.empty()) {
    internal::RequireSameSize(keys.size(), results.size(), kWho, "keys",
                              "results");
  }
  const std::size_t n = keys.size();
  const std::size_t shards = runtime_.shard_count();
  // The keys' indices grouped by shard, each group in the keys' order: a
  // counting sort on the shard index.
  std::vector<std::size_t> first(shards + 1, 0);
  std::vector<std::size_t> order(n);
  {
    std::vector<std::uint32_t> shard_of(n);
    for (std::size_t i = 0; i < n; ++i) {
      shard_of[i] =
          static_cast<std::uint32_t>(runtime_.IndexFor(Hash{}(keys[i])));
      ++first[shard_of[i] + 1];
    }
    for (std::size_t s = 0; s < shards; ++s) first[s + 1] += first[s];
    std::vector<std::size_t> next(first.begin(), first.end() - 1);
    for (std::size_t i = 0; i < n; ++i) order[next[shard_of[i]]++] = i;
  }
  std::vector<std::size_t> busy;  // the shards with keys, in index order
  for (std::size_t s = 0; s < shards; ++s) {
    if (first[s] != first[s + 1]) busy.push_back(s);
  }
  // The shards whose locks this call holds: the one being worked on, and
  // the next, whose first map lines load meanwhile (locks are taken in
  // shard order, so batches never wait for each other in a cycle).
  struct Held {
    typename Runtime::Shard* shard[2] = {nullptr, nullptr};
    ~Held() {
      for (typename Runtime::Shard* s : shard) {
        if (s != nullptr) s->mutex.Unlock();
      }
    }
  } held;
  // Starts loading the map lines of keys [from, to) of a locked shard.
  auto prefetch = [&](typename Runtime::Shard& shard, std::size_t from,
                      std::size_t to) {
    shard.mutex.AssertHeld();  // REQUIRES: the caller holds it
    if (shard.stopped) return;
    for (std::size_t k = from; k < to; ++k) {
      shard.state.PrefetchMap(keys[order[k]]);
    }
  };
  std::size_t count = 0;
  MapStep steps[kBatchWindow];
  for (std::size_t b = 0; b < busy.size(); ++b) {
    const std::size_t s = busy[b];
    typename Runtime::Shard& shard = runtime_.shard(s);
    if (held.shard[1] == nullptr) {  // the first shard
      shard.mutex.Lock();
      held.shard[1] = &shard;
      prefetch(shard, first[s], std::min(first[s + 1], first[s] + kBatchWindow));
    }
    held.shard[0] = held.shard[1];
    held.shard[1] = nullptr;
    if (shard.stopped) {
      if (!results.empty()) {
        for (std::size_t k = first[s]; k < first[s + 1]; ++k) {
          results[order[k]] = false;
        }
      }
    }
    State& state = shard.state;
    std::optional<TimePoint> earliest;
    for (std::size_t w = first[s]; w < first[s + 1] && !shard.stopped;
         w += kBatchWindow) {
      const std::size_t end = std::min(first[s + 1], w + kBatchWindow);
      // The next window's map lines, of this shard or the next one, load
      // while this window works.
      if (end < first[s + 1]) {
        prefetch(shard, end, std::min(first[s + 1], end + kBatchWindow));
      } else if (b + 1 < busy.size()) {
        const std::size_t t = busy[b + 1];
        typename Runtime::Shard& next = runtime_.shard(t);
        next.mutex.Lock();
        held.shard[1] = &next;
        prefetch(next, first[t], std::min(first[t + 1], first[t] + kBatchWindow));
      }
      // Room in the wheel's queue for the window's moves and cancels, so
      // that no wheel part can throw: each key's call is made entirely or
      // not at all. If this throws, none of the window's calls is made.
      std::size_t k = w;
      std::exception_ptr error;
      try {
        internal::WheelAccess::ReserveQueue(state.wheel, kBatchWindow);
        for (; k < end; ++k) {
          const MapStep step = map_part(state, order[k]);
          steps[k - w] = step;
          if (step.timer.valid()) {
            internal::WheelAccess::Prefetch(state.wheel, step.timer);
          }
        }
      } catch (...) {
        error = std::current_exception();  // call k was not made
      }
      for (std::size_t j = w; j < k; ++j) {
        const std::size_t i = order[j];
        const MapStep& step = steps[j - w];
        if (step.timer.valid()) wheel_part(state, i, step.timer);
        if (!results.empty()) results[i] = step.result;
        if (!step.result) continue;
        ++count;
        if (const std::optional<TimePoint> d = deadline(i)) {
          if (!earliest || *d < *earliest) earliest = d;
        }
      }
      if (error) {
        // Every call made so far wakes the timer thread as it should.
        if (earliest) runtime_.Notify(*earliest);
        std::rethrow_exception(error);
      }
    }
    if (earliest) runtime_.Notify(*earliest);
    if (shard.stopped && b + 1 < busy.size() && held.shard[1] == nullptr) {
      // A stopped shard ran no window: take the next shard's lock here.
      const std::size_t t = busy[b + 1];
      typename Runtime::Shard& next = runtime_.shard(t);
      next.mutex.Lock();
      held.shard[1] = &next;
      prefetch(next, first[t], std::min(first[t + 1], first[t] + kBatchWindow));
    }
    held.shard[0] = nullptr;
    shard.mutex.Unlock();
  }
  return count;
}

template <typename Key, typename Value, typename Hash, typename KeyEqual>
std::size_t TimingWheel<Key, Value, Hash, KeyEqual>::SetTimers(
    std::span<const Key> keys, std::span<Value> values,
    std::span<const Duration> delays) {
  internal::RequireSameSize(keys.size(), values.size(), kWho, "keys", "values");
  internal::RequireSameSize(keys.size(), delays.size(), kWho, "keys", "delays");
  const TimePoint now = runtime_.clock().Now();
  auto deadline = [&](std::size_t i) {
    return std::optional<TimePoint>(internal::DeadlineAt(now, delays[i]));
  };
  // A new key is scheduled in the map part (its node is new: no miss); an
  // existing one gets its value there and its move in the wheel part. The
  // values it replaces, and what a failed insert leaves, are destroyed
  // after the locks are released.
  std::vector<Value> replaced;
  if constexpr (!std::is_trivially_destructible_v<Value>) {
    replaced.reserve(keys.size());
  }
  typename State::Garbage garbage;
  return Batch(
      keys, {},
      [&](State& state, std::size_t i) {
        const TimerId timer =
            state.SetValue(keys[i], values[i], *deadline(i), garbage);
        if constexpr (!std::is_trivially_destructible_v<Value>) {
          // The old value, swapped into values[i]: no allocation (reserved).
          if (timer.valid()) replaced.push_back(std::move(values[i]));
        }
        return MapStep{true, timer};
      },
      [&](State& state, std::size_t i, TimerId timer) {
        state.wheel.Reschedule(timer, *deadline(i));  // cannot throw here
      },
      deadline);
}

template <typename Key, typename Value, typename Hash, typename KeyEqual>
std::size_t TimingWheel<Key, Value, Hash, KeyEqual>::MoveTimers(
    std::span<const Key> keys, std::span<const Duration> delays,
    std::span<bool> results) {
  internal::RequireSameSize(keys.size(), delays.size(), kWho, "keys", "delays");
  const TimePoint now = runtime_.clock().Now();
  auto deadline = [&](std::size_t i) {
    return std::optional<TimePoint>(internal::DeadlineAt(now, delays[i]));
  };
  return Batch(
      keys, results,
      [&](State& state, std::size_t i) {
        const TimerId timer = state.TimerOf(keys[i]);
        return MapStep{timer.valid(), timer};
      },
      [&](State& state, std::size_t i, TimerId timer) {
        state.wheel.Reschedule(timer, *deadline(i));
      },
      deadline);
}

template <typename Key, typename Value, typename Hash, typename KeyEqual>
std::size_t TimingWheel<Key, Value, Hash, KeyEqual>::MoveTimers(
    std::span<const Key> keys, Duration delay, std::span<bool> results) {
  const TimePoint deadline = runtime_.DeadlineAfter(delay);
  return Batch(
      keys, results,
      [&](State& state, std::size_t i) {
        const TimerId timer = state.TimerOf(keys[i]);
        return MapStep{timer.valid(), timer};
      },
      [&](State& state, std::size_t, TimerId timer) {
        state.wheel.Reschedule(timer, deadline);
      },
      [&](std::size_t) { return std::optional<TimePoint>(deadline); });
}

template <typename Key, typename Value, typename Hash, typename KeyEqual>
std::size_t TimingWheel<Key, Value, Hash, KeyEqual>::RemoveTimers(
    std::span<const Key> keys, std::span<bool> results) {
  // The removed entries and their timers' copies of the keys are destroyed
  // after the locks are released (no allocation under them: reserved).
  constexpr bool kTrivial = std::is_trivially_destructible_v<Key> &&
                            std::is_trivially_destructible_v<Value>;
  std::vector<typename State::Entry> removed;
  std::vector<Key> wheel_keys;
  if constexpr (!kTrivial) {
    removed.reserve(keys.size());
    wheel_keys.reserve(keys.size());
  }
  return Batch(
      keys, results,
      [&](State& state, std::size_t i) {
        std::optional<typename State::Entry> entry = state.map.Extract(keys[i]);
        if (!entry) return MapStep{false, TimerId()};
        const TimerId timer = entry->mapped.timer;
        if constexpr (!kTrivial) removed.push_back(std::move(*entry));
        return MapStep{true, timer};
      },
      [&](State& state, std::size_t, TimerId timer) {
        if constexpr (kTrivial) {
          state.wheel.Cancel(timer);
        } else {
          wheel_keys.push_back(
              std::move(*internal::WheelAccess::Take(state.wheel, timer)));
        }
      },
      [](std::size_t) { return std::optional<TimePoint>(); });
}

template <typename Key, typename Value, typename Hash, typename KeyEqual>
bool TimingWheel<Key, Value, Hash, KeyEqual>::Drain(
    const std::function<void(const Key&, const Value&)>& fn) {
  std::vector<Fired> drained;
  std::vector<Key> wheel_keys;
  if (!TakeAll(drained, wheel_keys)) return false;
  // Every pair is handed over, also if `fn` throws for some; the first
  // exception is rethrown at the end.
  std::exception_ptr error;
  for (Fired& pair : drained) {
    try {
      fn(pair.key, pair.value);
    } catch (...) {
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
  return true;
}

template <typename Key, typename Value, typename Hash, typename KeyEqual>
bool TimingWheel<Key, Value, Hash, KeyEqual>::TakeAll(
    std::vector<Fired>& drained,
    std::vector<Key>& wheel_keys) TW_NO_THREAD_SAFETY_ANALYSIS {
  // (Every shard is locked at once, in index order as batches lock them,
  // which the analysis cannot follow: `locked` pairs each Lock with its
  // Unlock.) All at once: a Drain that meets Stop takes nothing or
  // everything, never some shards' timers only.
  struct Locked {
    Runtime& runtime;
    std::size_t count = 0;
    ~Locked() {
      while (count > 0) runtime.shard(--count).mutex.Unlock();
    }
  } locked{runtime_};
  std::size_t total = 0;
  for (; locked.count < runtime_.shard_count(); ++locked.count) {
    typename Runtime::Shard& shard = runtime_.shard(locked.count);
    shard.mutex.Lock();
    if (shard.stopped) {
      shard.mutex.Unlock();
      return false;
    }
    total += shard.state.map.size();
  }
  // The only allocations: if they fail, nothing was taken.
  drained.reserve(total);
  if constexpr (!std::is_trivially_destructible_v<Key>) {
    wheel_keys.reserve(total);
  }
  for (std::size_t s = 0; s < runtime_.shard_count(); ++s) {
    runtime_.shard(s).state.TakeAll(drained, wheel_keys);
  }
  return true;
}

template <typename Key, typename Value, typename Hash, typename KeyEqual>
std::size_t TimingWheel<Key, Value, Hash, KeyEqual>::size() const {
  std::size_t total = 0;
  for (std::size_t s = 0; s < runtime_.shard_count(); ++s) {
    typename Runtime::Shard& shard = runtime_.shard(s);
    internal::MutexLock lock(shard.mutex);
    if (!shard.stopped) total += shard.state.map.size();
  }
  return total;
}

}  // namespace tickwheel

#endif  // TICKWHEEL_TIMING_WHEEL_H_
