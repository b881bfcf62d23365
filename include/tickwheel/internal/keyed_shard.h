// SPDX-License-Identifier: Apache-2.0
// One shard of a keyed timing wheel: the keys that hash to it, their
// values and their timers.
#ifndef TICKWHEEL_INTERNAL_KEYED_SHARD_H_
#define TICKWHEEL_INTERNAL_KEYED_SHARD_H_

#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

#include "tickwheel/internal/flat_map.h"
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
// Thread safety: none; the owner's shard lock guards it.
// Cost: Set, Move, Remove O(1): a map lookup (one cache miss at scale) and
// a Wheel operation on the key's node (another). Firing a key costs one
// more lookup.
template <typename Key, typename Value, typename Hash, typename KeyEqual>
struct KeyedShard {
  // A fired key on its way to `execute`, or a drained one.
  struct Fired {
    Key key;
    Value value;
  };

  KeyedShard(Duration tick, TimePoint origin, std::size_t /*index*/,
             std::size_t /*count*/)
      : wheel(tick, origin) {}

  // New key: schedules it; existing key: replaces its value and moves its
  // timer. `value` is moved from only when it is stored.
  void Set(const Key& key, Value& value, TimePoint deadline) {
    // One lookup: insert, or find the key's entry.
    auto [entry, inserted] =
        map.TryEmplace(key, [&] { return Mapped{std::move(value), TimerId()}; });
    if (!inserted) {
      wheel.Reschedule(entry->mapped.timer, deadline);
      entry->mapped.value = std::move(value);
      return;
    }
    try {
      entry->mapped.timer = wheel.Schedule(deadline, key);
    } catch (...) {
      map.Extract(key);
      throw;
    }
  }

  // False if the key has no timer.
  bool Move(const Key& key, TimePoint deadline) {
    Entry* entry = map.Find(key);
    if (entry == nullptr) return false;
    wheel.Reschedule(entry->mapped.timer, deadline);
    return true;
  }

  // False if the key has no timer.
  bool Remove(const Key& key) {
    std::optional<typename Map::Entry> removed = map.Extract(key);
    if (!removed) return false;
    wheel.Cancel(removed->mapped.timer);
    return true;
  }

  // The halves of Set, Move and Remove for batches, which run every map
  // half first and the wheel halves after (see TimingWheel::Batch).
  //
  // Set's map half: a new key is scheduled at once (its node is new, so
  // loading it costs nothing) and the result is invalid; an existing key
  // gets `value` and its timer is returned, for the caller to move.
  TimerId SetValue(const Key& key, Value& value, TimePoint deadline) {
    auto [entry, inserted] =
        map.TryEmplace(key, [&] { return Mapped{std::move(value), TimerId()}; });
    if (!inserted) {
      entry->mapped.value = std::move(value);
      return entry->mapped.timer;
    }
    try {
      entry->mapped.timer = wheel.Schedule(deadline, key);
    } catch (...) {
      map.Extract(key);
      throw;
    }
    return TimerId();
  }
  // The key's timer, or an invalid id.
  TimerId TimerOf(const Key& key) {
    const Entry* entry = map.Find(key);
    return entry != nullptr ? entry->mapped.timer : TimerId();
  }
  // Takes the key out of the map and returns its timer (which the caller
  // cancels), or an invalid id.
  TimerId ExtractTimer(const Key& key) {
    std::optional<typename Map::Entry> removed = map.Extract(key);
    return removed ? removed->mapped.timer : TimerId();
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
  // earliest pending deadline.
  std::optional<TimePoint> Advance(TimePoint now, std::vector<Fired>& fired) {
    wheel.Advance(now, [&](Key&& key) {
      std::optional<typename Map::Entry> entry = map.Extract(key);
      fired.push_back(Fired{std::move(key), std::move(entry->mapped.value)});
    });
    return wheel.NextDeadline();
  }

  // Drops every timer (Stop).
  void Discard() {
    map.ForEach([&](Entry& entry) { wheel.Cancel(entry.mapped.timer); });
    map.Clear();
  }

  // Removes every timer, appending its key and value to `out` (Drain).
  void TakeAll(std::vector<Fired>& out) {
    out.reserve(out.size() + map.size());
    map.ForEach([&](typename Map::Entry& entry) {
      wheel.Cancel(entry.mapped.timer);
      out.push_back(Fired{std::move(entry.key), std::move(entry.mapped.value)});
    });
    map.Clear();
  }

  struct Mapped {
    Value value;
    TimerId timer;
  };
  using Map = FlatMap<Key, Mapped, Hash, KeyEqual>;
  using Entry = typename Map::Entry;

  Wheel<Key> wheel;
  Map map;
};

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_INTERNAL_KEYED_SHARD_H_
