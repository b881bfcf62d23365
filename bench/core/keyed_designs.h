// SPDX-License-Identifier: Apache-2.0
// Two other ways to build tickwheel::TimingWheel's single calls, written
// for keyed_bench to measure against it (docs/performance.md says what lost
// and why). Both are TimingWheel's shards (internal::KeyedShard on the
// internal::ShardedRuntime) with synchronous calls, so RemoveTimer returning
// true still means that `execute` will not run; they differ in how a call
// reaches its shard.
//
// - FlatCombiningKeyedWheel: a call publishes a request on its shard's
//   lock-free list and tries to take the shard's lock; whoever holds it
//   applies every published request as one batch (map lines, then wheel
//   nodes, prefetched for all of them first, so their misses overlap) and
//   hands each caller its result. Callers that lose the race spin, then
//   yield, until their request is done.
// - PrefetchingKeyedWheel: a call starts loading its key's map line before
//   it takes the lock (a lock-free read of the map's array; the map is
//   sized for every key up front, so the array never moves), so that the
//   miss overlaps the lock's acquisition instead of sitting inside it.
#ifndef TICKWHEEL_BENCH_CORE_KEYED_DESIGNS_H_
#define TICKWHEEL_BENCH_CORE_KEYED_DESIGNS_H_

#include <immintrin.h>

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "tickwheel/internal/keyed_shard.h"
#include "tickwheel/internal/sharded_runtime.h"
#include "tickwheel/time.h"

namespace tickwheel::bench {

template <typename Key, typename Value>
class FlatCombiningKeyedWheel {
 public:
  using Execute = std::function<void(const Key&, const Value&)>;

  FlatCombiningKeyedWheel(Duration interval, Execute execute, std::size_t shards)
      : execute_(std::move(execute)),
        runtime_({.who = "FlatCombiningKeyedWheel", .tick = interval, .shards = shards},
                 [this](Fired& f) { execute_(f.key, f.value); }),
        lists_(runtime_.shard_count()) {}
  ~FlatCombiningKeyedWheel() { runtime_.Stop(); }

  bool SetTimer(const Key& key, Value value, Duration delay) {
    Request r{Op::kSet, key, std::move(value), runtime_.DeadlineAfter(delay)};
    return Call(r);
  }
  bool MoveTimer(const Key& key, Duration delay) {
    Request r{Op::kMove, key, Value{}, runtime_.DeadlineAfter(delay)};
    return Call(r);
  }
  bool RemoveTimer(const Key& key) {
    Request r{Op::kRemove, key, Value{}, TimePoint::min()};
    return Call(r);
  }

 private:
  using State = internal::KeyedShard<Key, Value, std::hash<Key>, std::equal_to<Key>>;
  using Fired = typename State::Fired;
  using Runtime = internal::ShardedRuntime<State, Fired>;
  enum class Op { kSet, kMove, kRemove };
  struct Request {
    Op op;
    Key key;
    Value value;
    TimePoint deadline;
    Request* next = nullptr;
    bool result = false;
    std::atomic<bool> done{false};  // set last, by the combiner
  };
  struct alignas(64) List {
    std::atomic<Request*> head{nullptr};
  };

  bool Call(Request& r) {
    const std::size_t s = runtime_.IndexFor(std::hash<Key>{}(r.key));
    List& list = lists_[s];
    r.next = list.head.load(std::memory_order_relaxed);
    while (!list.head.compare_exchange_weak(r.next, &r, std::memory_order_release,
                                            std::memory_order_relaxed)) {
    }
    typename Runtime::Shard& shard = runtime_.shard(s);
    for (unsigned spins = 0;; ++spins) {
      if (r.done.load(std::memory_order_acquire)) return r.result;
      if (shard.mutex.TryLock()) {
        Request* batch = list.head.exchange(nullptr, std::memory_order_acquire);
        Combine(shard, batch);
        shard.mutex.Unlock();
        continue;
      }
      if (spins < 128) {
        _mm_pause();
      } else {
        std::this_thread::yield();
      }
    }
  }

  // Applies a published list (newest first) oldest first.
  void Combine(typename Runtime::Shard& shard, Request* newest)
      TW_REQUIRES(shard.mutex) {
    // One per combining thread: combiners of different shards run at once.
    thread_local std::vector<Request*> batch_;
    batch_.clear();
    for (Request* r = newest; r != nullptr; r = r->next) batch_.push_back(r);
    State& state = shard.state;
    for (Request* r : batch_) state.PrefetchMap(r->key);
    for (Request* r : batch_) state.PrefetchNode(r->key);
    std::optional<TimePoint> earliest;
    for (auto it = batch_.rbegin(); it != batch_.rend(); ++it) {
      Request& r = **it;
      bool ok = false;
      if (!shard.stopped) {
        switch (r.op) {
          case Op::kSet:
            state.Set(r.key, r.value, r.deadline);
            ok = true;
            break;
          case Op::kMove:
            ok = state.Move(r.key, r.deadline);
            break;
          case Op::kRemove:
            ok = state.Remove(r.key);
            break;
        }
      }
      if (ok && r.op != Op::kRemove && (!earliest || r.deadline < *earliest)) {
        earliest = r.deadline;
      }
      r.result = ok;
    }
    if (earliest) runtime_.Notify(*earliest);
    // The callers' requests live on their stacks: nothing is touched after
    // a request is marked done.
    for (Request* r : batch_) r->done.store(true, std::memory_order_release);
  }

  const Execute execute_;
  Runtime runtime_;
  std::vector<List> lists_;  // one per shard
};

template <typename Key, typename Value>
class PrefetchingKeyedWheel {
 public:
  using Execute = std::function<void(const Key&, const Value&)>;

  // Sizes every shard's map for `keys` keys up front.
  PrefetchingKeyedWheel(Duration interval, Execute execute, std::size_t keys)
      : execute_(std::move(execute)),
        runtime_({.who = "PrefetchingKeyedWheel", .tick = interval},
                 [this](Fired& f) { execute_(f.key, f.value); }) {
    for (std::size_t s = 0; s < runtime_.shard_count(); ++s) {
      typename Runtime::Shard& shard = runtime_.shard(s);
      internal::MutexLock lock(shard.mutex);
      // Twice the share of a uniform spread, so that no shard grows.
      shard.state.map.Reserve(2 * keys / runtime_.shard_count() + 64);
    }
  }
  ~PrefetchingKeyedWheel() { runtime_.Stop(); }

  bool SetTimer(const Key& key, Value value, Duration delay) {
    const TimePoint deadline = runtime_.DeadlineAfter(delay);
    typename Runtime::Shard& shard = Prefetched(key);
    internal::MutexLock lock(shard.mutex);
    if (shard.stopped) return false;
    shard.state.Set(key, value, deadline);
    runtime_.Notify(deadline);
    return true;
  }
  bool MoveTimer(const Key& key, Duration delay) {
    const TimePoint deadline = runtime_.DeadlineAfter(delay);
    typename Runtime::Shard& shard = Prefetched(key);
    internal::MutexLock lock(shard.mutex);
    if (shard.stopped || !shard.state.Move(key, deadline)) return false;
    runtime_.Notify(deadline);
    return true;
  }
  bool RemoveTimer(const Key& key) {
    typename Runtime::Shard& shard = Prefetched(key);
    internal::MutexLock lock(shard.mutex);
    return !shard.stopped && shard.state.Remove(key);
  }

 private:
  using State = internal::KeyedShard<Key, Value, std::hash<Key>, std::equal_to<Key>>;
  using Fired = typename State::Fired;
  using Runtime = internal::ShardedRuntime<State, Fired>;

  // The key's shard, with its map line on the way in. Reads the map's array
  // without the lock: it never moves (reserved), and a prefetch of a stale
  // line is harmless.
  typename Runtime::Shard& Prefetched(const Key& key) TW_NO_THREAD_SAFETY_ANALYSIS {
    typename Runtime::Shard& shard = runtime_.ShardFor(std::hash<Key>{}(key));
    shard.state.PrefetchMap(key);
    return shard;
  }

  const Execute execute_;
  Runtime runtime_;
};

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_BENCH_CORE_KEYED_DESIGNS_H_
