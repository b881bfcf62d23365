// SPDX-License-Identifier: Apache-2.0
// One shard of a keyed timing wheel: the keys that hash to it, their
// values and their timers.
#ifndef TICKWHEEL_INTERNAL_KEYED_SHARD_H_
#define TICKWHEEL_INTERNAL_KEYED_SHARD_H_

#include <algorithm>
#include <cstddef>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "tickwheel/internal/flat_map.h"
#include "tickwheel/internal/sharded_runtime.h"
#include "tickwheel/time.h"
#include "tickwheel/timer_id.h"
#include "tickwheel/wheel.h"

namespace tickwheel::internal {

// KeyedShard holds at most one timer per key: a FlatMap from key to (value,
// timer id) and a Wheel whose payload is the key (map entries move, so the
// wheel cannot point at them). It is the State of TimingWheel's
// ShardedRuntime (see sharded_runtime.h) and of the keyed designs the
// benchmarks compare it with.
//
// User objects are never destroyed here while the owner holds its lock:
// what a call takes out of the shard (a replaced value, a removed entry, a
// cancelled timer's copy of the key) is moved into the caller's `value` or
// Garbage, which the caller destroys after unlocking. (Keys are copied and
// moved here, and Hash and KeyEqual called, under the lock.)
//
// Thread safety: none; the owner's shard lock guards it.
// Cost: Set, Move, Remove O(1): a map lookup (one cache miss at scale) and
// a Wheel operation on the key's node (another). Firing a key costs one
// more lookup.
// Exceptions: Set, Move and Remove either happen or throw (std::bad_alloc)
// having changed nothing.
template <typename Key, typename Value, typename Hash, typename KeyEqual>
struct KeyedShard {
  struct Mapped {
    Value value;
    TimerId timer;
  };
  using Map = FlatMap<Key, Mapped, Hash, KeyEqual>;
  using Entry = typename Map::Entry;

  // A fired key on its way to `execute` (with the time it was due, by
  // which the runtime orders what several shards fired), or a drained one.
  struct Fired {
    Key key;
    Value value;
    TimePoint due{};
  };

  // What a call took out of the shard, for the caller to destroy after
  // unlocking.
  struct Garbage {
    std::optional<Entry> entry;    // a removed map entry
    std::optional<Key> wheel_key;  // a cancelled timer's copy of the key
  };

  KeyedShard(Duration tick, TimePoint origin, std::size_t /*index*/,
             std::size_t /*count*/)
      : wheel(tick, origin) {}

  // New key: schedules it, moving from `value`. Existing key: moves its
  // timer and swaps `value` with the key's value, so the old value leaves
  // with `value`. If it throws, nothing changed and `value` is as it was.
  void Set(const Key& key, Value& value, TimePoint deadline,
           Garbage& garbage) {
    SetValue(key, value, deadline, garbage, /*move=*/true);
  }
  // For callers without a lock of their own (the benchmarks).
  void Set(const Key& key, Value& value, TimePoint deadline) {
    Garbage garbage;
    Set(key, value, deadline, garbage);
  }

  // False if the key has no timer. May throw std::bad_alloc, having moved
  // nothing.
  bool Move(const Key& key, TimePoint deadline) {
    Entry* entry = map.Find(key);
    if (entry == nullptr) return false;
    wheel.Reschedule(entry->mapped.timer, deadline);
    return true;
  }

  // False if the key has no timer. The removed entry and the timer's copy
  // of the key go to `garbage`.
  bool Remove(const Key& key, Garbage& garbage) noexcept {
    garbage.entry = map.Extract(key);
    if (!garbage.entry) return false;
    garbage.wheel_key = WheelAccess::Take(wheel, garbage.entry->mapped.timer);
    return true;
  }
  bool Remove(const Key& key) noexcept {
    Garbage garbage;
    return Remove(key, garbage);
  }

  // The halves of Set, Move and Remove for batches, which run every map
  // half first and the wheel halves after (see TimingWheel::Batch).
  //
  // Set's map half: a new key is scheduled at once (its node is new, so
  // loading it costs nothing) and the result is invalid; an existing key's
  // value is swapped with `value` and its timer is returned, for the caller
  // to move (with `move`, Set moves it here). If it throws (a new key,
  // out of memory), nothing changed and `value` is as it was.
  TimerId SetValue(const Key& key, Value& value, TimePoint deadline,
                   Garbage& garbage, bool move = false) {
    auto [entry, inserted] =
        map.TryEmplace(key, [&] { return Mapped{std::move(value), TimerId()}; });
    if (!inserted) {
      if (move) wheel.Reschedule(entry->mapped.timer, deadline);  // may throw
      using std::swap;
      swap(entry->mapped.value, value);
      return entry->mapped.timer;
    }
    try {
      Key& wheel_key = garbage.wheel_key.emplace(key);
      entry->mapped.timer = WheelAccess::ScheduleFrom(wheel, deadline, wheel_key);
    } catch (...) {
      garbage.entry = map.Extract(key);
      value = std::move(garbage.entry->mapped.value);
      throw;
    }
    return TimerId();
  }
  // The key's timer, or an invalid id.
  TimerId TimerOf(const Key& key) {
    const Entry* entry = map.Find(key);
    return entry != nullptr ? entry->mapped.timer : TimerId();
  }

  // Start loading what an operation on `key` touches: PrefetchMap its map
  // line; PrefetchNode (once that line is in) its wheel node. A batch
  // issues the first for all its keys, then the second, then operates, so
  // that the misses of its keys overlap instead of following each other.
  void PrefetchMap(const Key& key) const { map.Prefetch(key); }
  void PrefetchNode(const Key& key) {
    if (const Entry* entry = map.Find(key)) {
      WheelAccess::Prefetch(wheel, entry->mapped.timer);
    }
  }

  // The runtime's step: fires what is due at `now` into `fired` (the key
  // leaves the map then, so from there on it is not pending); returns the
  // earliest pending deadline. If it throws (out of memory for `fired`),
  // every key it fired is in `fired` and the others are still pending.
  std::optional<TimePoint> Advance(TimePoint now, std::vector<Fired>& fired) {
    ReserveOneMore(fired);
    wheel.Advance(now, [&](Key&& key) {
      std::optional<Entry> entry = map.Extract(key);
      fired.push_back(Fired{std::move(key), std::move(entry->mapped.value),
                            WheelAccess::FiringDeadline(wheel)});
      ReserveOneMore(fired);  // may throw: this key is safe in `fired`
    });
    return wheel.NextDeadline();
  }

  // Drops every timer (Stop; under no lock, see ShardedRuntime).
  void Discard() noexcept {
    map.ForEach([&](Entry& entry) { wheel.Cancel(entry.mapped.timer); });
    map.Clear();
  }

  // Removes every timer, appending its key and value to `out` and its
  // timer's copy of the key to `wheel_keys` (Drain). REQUIRES: both have
  // room for size() more elements.
  void TakeAll(std::vector<Fired>& out, std::vector<Key>& wheel_keys) noexcept {
    map.ForEach([&](Entry& entry) {
      if constexpr (std::is_trivially_destructible_v<Key>) {
        wheel.Cancel(entry.mapped.timer);
      } else {
        wheel_keys.push_back(
            std::move(*WheelAccess::Take(wheel, entry.mapped.timer)));
      }
      out.push_back(Fired{std::move(entry.key), std::move(entry.mapped.value)});
    });
    map.Clear();
  }

  Wheel<Key> wheel;
  Map map;
};

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_INTERNAL_KEYED_SHARD_H_
