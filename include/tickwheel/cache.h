// SPDX-License-Identifier: Apache-2.0
// Cache<K, V>: an in-memory cache with a TTL per entry, an optional LRU
// limit, and Take(key, fetch) that fetches a missing key once for all its
// concurrent callers.
#ifndef TICKWHEEL_CACHE_H_
#define TICKWHEEL_CACHE_H_

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tickwheel/clock.h"
#include "tickwheel/internal/argument_checks.h"
#include "tickwheel/internal/lru_list.h"
#include "tickwheel/internal/mutex.h"
#include "tickwheel/internal/periodic_thread.h"
#include "tickwheel/internal/report_error.h"
#include "tickwheel/internal/sharded_runtime.h"
#include "tickwheel/time.h"
#include "tickwheel/wheel.h"

namespace tickwheel {

// Counters of a Cache. Every Get and Take counts one hit (a live entry was
// there) or one miss; an eviction is an entry dropped for the LRU limit, an
// expiration one dropped because its TTL ran out. (A call of
// CacheOptions::report that threw is counted by Cache::callback_errors(),
// not here: CacheStats keeps these five fields, so a structured binding of
// them written against earlier versions still compiles.)
struct CacheStats {
  std::uint64_t hits = 0;
  std::uint64_t misses = 0;
  std::uint64_t evictions = 0;
  std::uint64_t expirations = 0;
  std::size_t size = 0;  // entries held when the snapshot was taken

  // hits / (hits + misses), or 0 with no lookups.
  double hit_ratio() const {
    const std::uint64_t lookups = hits + misses;
    return lookups == 0
               ? 0.0
               : static_cast<double>(hits) / static_cast<double>(lookups);
  }
};

struct CacheOptions {
  // At most this many entries (> 0), the least recently used (Set, or Get
  // and Take hits) evicted first; 0: no limit. With several shards the
  // limit is split among them and recency is kept per shard.
  std::size_t limit = 0;
  // Each key's TTL is multiplied by a factor in [1 - jitter, 1 + jitter],
  // spread uniformly over keys, so entries set together do not all expire
  // together. The factor is fixed per key (derived from its hash), so
  // refreshing a key with the same TTL never moves its expiry earlier.
  // In [0, 1).
  double jitter = 0.05;
  // The timing wheel's tick (> 0): an expired entry's memory is freed
  // within about this long. (It is never returned once expired.)
  Duration resolution = std::chrono::milliseconds(100);
  // Independent lock + map + LRU shards, chosen by key hash. 0: 16 without
  // a limit; with one, one shard per 4096 entries of limit, 1 to 16 (so a
  // small limit is an exact LRU over the whole cache).
  std::size_t shards = 0;
  // nullptr means SystemClock::Instance(). Must outlive the cache.
  Clock* clock = nullptr;
  // With a positive interval, `report` is called every interval, on a
  // thread of the cache, with the counts of that interval (size: now).
  // An empty `report` writes one line to stderr naming `name`. `report`
  // may throw: what it throws is counted (Cache::callback_errors()) and
  // goes to on_error, and the next interval is reported as usual (with that
  // interval's counts).
  Duration report_interval = Duration::zero();
  std::function<void(const CacheStats&)> report = nullptr;
  std::string name = "cache";
  // Receives what `report` threw, on the report thread. Empty: one line on
  // stderr. It must not throw; if it does, that is one line on stderr and
  // is otherwise ignored. Either way the cache goes on reporting.
  std::function<void(std::exception_ptr)> on_error = nullptr;
};

// Cache is go-zero's collection.Cache without its races. Each entry expires
// a TTL after it was last Set (the default TTL, or one per Set, with a ±5%
// jitter fixed per key); a timer on its shard's wheel frees it, and an
// expired entry is never returned even if its timer has not run yet. An
// entry and its timer live in the same shard, under its lock, so no entry
// is left without an expiry (go-zero's Del can cancel the timer of a
// concurrent Set). Take(key, fetch) runs `fetch` once for all concurrent
// callers of a missing key and shares its value or its exception.
//
// Locks: `fetch`, `report` and on_error run under no lock of the cache,
// and a value or key that the cache lets go (replaced by Set, deleted,
// evicted, expired) is destroyed after the shard's lock is released (an
// expired one on the cache's timer thread), so destructors may call the
// cache. What does run under the lock, and so must not call the cache:
// K's and V's copy and move constructors and assignments (Get's copy of a
// value too), Hash and KeyEqual.
//
// Failures: Set and Take either store the entry or throw (std::bad_alloc)
// having changed nothing (Take's waiters get the same exception); Get, Del,
// size, stats and callback_errors allocate nothing (Get may throw what V's
// copy throws). A `fetch` that throws reaches every waiting Take and
// nothing is cached; a `report` that throws is counted (callback_errors),
// handed to on_error, and reporting goes on. Out of memory, the timer
// thread reports the std::bad_alloc on stderr and tries again
// max(resolution, 1 ms) later; an expired entry is never returned
// meanwhile.
//
// Thread safety: every method may be called from any thread; `fetch` may
// call the cache (but not Take the key it is fetching).
// Cost: Get, Set, Del O(1) under one shard's mutex; Del, and a Set that
// adds a key or moves its expiry earlier, also make one wheel operation (a
// refresh does not). Expired entries are freed on the runtime's timer
// thread, under their shard's lock. Values are copied out by Get and Take
// (use std::shared_ptr<const T> for large values). Hash must be default
// constructible (it is used as Hash{}).
// Memory: per entry, a map node (key, value, two time points, a timer id,
// two LRU links) and a wheel node (a second copy of the key).
//
//   Cache<std::string, User> users(std::chrono::minutes(5),
//                                  {.limit = 100'000});
//   User u = users.Take(id, [&] { return db.LoadUser(id); });
template <typename K, typename V, typename Hash = std::hash<K>,
          typename KeyEqual = std::equal_to<K>>
class Cache {
 public:
  // Throws std::invalid_argument naming the argument if `ttl` or
  // `resolution` is not positive, or `jitter` is outside [0, 1).
  explicit Cache(Duration ttl, CacheOptions options = {});
  // Stops the expiry timers and the report. REQUIRES: no call in progress.
  ~Cache();

  Cache(const Cache&) = delete;
  Cache& operator=(const Cache&) = delete;

  // The value of a live entry (a hit, which also makes it the most recently
  // used), or nullopt (a miss).
  std::optional<V> Get(const K& key);

  // Stores `value` under `key` for the default TTL or for `ttl` (each with
  // jitter), replacing any entry and its expiry. May evict the least
  // recently used entry. Throws std::invalid_argument if `ttl` <= 0.
  void Set(const K& key, V value);
  void Set(const K& key, V value, Duration ttl);

  // Removes the entry; returns whether a live one was there.
  bool Del(const K& key);

  // Get, or on a miss the value `fetch()` returns, which is then Set with
  // the default TTL. Concurrent Takes of the same missing key run `fetch`
  // once: the others wait for it and get a copy of its value, or the same
  // exception rethrown (nothing is cached then). Each call counts one hit
  // or one miss, as Get.
  // REQUIRES: fetch() returns something convertible to V.
  template <typename Fetch>
  V Take(const K& key, Fetch&& fetch);

  // Counts since construction and the current size.
  CacheStats stats() const;

  // Entries held, including expired ones whose timer has not yet run.
  std::size_t size() const;

  // Calls of CacheOptions::report that threw, since construction. Each is
  // counted before it is handed to on_error, so on_error sees itself
  // counted. Never throws.
  std::uint64_t callback_errors() const {
    return report_errors_.load(std::memory_order_relaxed);
  }

 private:
  static constexpr const char* kWho = "Cache";
  struct Entry;
  using Map = std::unordered_map<K, Entry, Hash, KeyEqual>;
  using Node = typename Map::value_type;
  struct LinksOf {
    internal::LruLinks<Node>& operator()(Node& node) const {
      return node.second.lru;
    }
  };
  struct Entry {
    Entry(V&& v, TimePoint expiry, TimerId t)
        : value(std::move(v)), expires_at(expiry), timer_at(expiry), timer(t) {}
    V value;
    TimePoint expires_at;
    // The deadline of the key's wheel timer: at most expires_at. When the
    // timer fires, the entry is freed, or its timer re-armed for the rest.
    TimePoint timer_at;
    TimerId timer;
    internal::LruLinks<Node> lru;  // listed only when the shard has a limit
  };
  // What leaves a shard under its lock, destroyed by the caller after
  // unlocking (keys' and values' destructors are user code): an erased
  // entry's map node, and the copy of its key its timer held. Expired
  // entries leave the same way, through the runtime (destroyed on its timer
  // thread under no lock).
  struct Garbage {
    typename Map::node_type node;
    std::optional<K> wheel_key;
  };
  using Expired = Garbage;

  // The keys that hash to one shard, their recency and their timers.
  struct State {
    State(Duration tick, TimePoint origin, std::size_t, std::size_t)
        : wheel(tick, origin) {}

    // Frees the expired entries whose timers fire (into `expired`);
    // re-arms the others. If it throws (out of memory for `expired`), what
    // it took out of the wheel is in `expired`.
    std::optional<TimePoint> Advance(TimePoint now,
                                     std::vector<Expired>& expired);
    void Discard() noexcept {}  // entries stay until the cache is destroyed

    // Takes the entry out, with its timer's copy of the key, into `out`.
    void Erase(typename Map::iterator it, Garbage& out) noexcept {
      if constexpr (std::is_nothrow_move_constructible_v<K> &&
                    !std::is_trivially_destructible_v<K>) {
        out.wheel_key = internal::WheelAccess::Take(wheel, it->second.timer);
      } else {
        wheel.Cancel(it->second.timer);
      }
      if (limit != 0) lru.Remove(&*it);
      out.node = map.extract(it);
    }

    Map map;
    internal::LruList<Node, LinksOf> lru;
    std::size_t limit = 0;  // 0: no LRU
    std::unordered_map<K, std::shared_future<V>, Hash, KeyEqual> fetches;
    CacheStats counts;  // size unused
    Wheel<K> wheel;     // payload: the key
  };
  using Runtime = internal::ShardedRuntime<State, Expired>;
  using Shard = typename Runtime::Shard;

  static std::size_t ShardCount(const CacheOptions& options);
  static internal::RuntimeConfig MakeConfig(const CacheOptions& options);

  // The entry of `key` if it is live; an expired one is taken out into
  // `expired`.
  Entry* FindLive(State& state, const K& key, TimePoint now, Garbage& expired);
  // Stores `value` (an existing key's old value is swapped into `value`; a
  // key that the LRU limit evicts goes to `evicted`). If it throws, nothing
  // changed and `value` is as it was.
  void Set(Shard& shard, const K& key, std::size_t hash, V& value,
           Duration ttl, TimePoint now, Garbage& evicted)
      TW_REQUIRES(shard.mutex);
  // `ttl` times the key's jitter factor (see CacheOptions::jitter).
  Duration Jittered(std::size_t hash, Duration ttl) const;
  void Report();

  const Duration ttl_;
  const double jitter_;
  const std::string name_;
  const std::function<void(const CacheStats&)> report_;
  const std::function<void(std::exception_ptr)> on_error_;
  CacheStats reported_;  // the totals at the previous report; report thread
  std::atomic<std::uint64_t> report_errors_{0};  // `report` calls that threw
  Runtime runtime_;
  std::unique_ptr<internal::PeriodicThread> reporter_;  // last
};

// ---------------------------------------------------------------------------
// Implementation.

template <typename K, typename V, typename Hash, typename KeyEqual>
std::size_t Cache<K, V, Hash, KeyEqual>::ShardCount(
    const CacheOptions& options) {
  // With a limit, never more shards than the limit: each shard holds at
  // least one entry, so more would hold more than the limit in total.
  if (options.limit != 0) {
    const std::size_t wanted =
        options.shards != 0 ? options.shards : options.limit / 4096;
    return std::clamp<std::size_t>(wanted, 1, std::min<std::size_t>(
                                                  options.limit,
                                                  options.shards != 0
                                                      ? options.shards
                                                      : 16));
  }
  return options.shards != 0 ? options.shards : 16;
}

template <typename K, typename V, typename Hash, typename KeyEqual>
internal::RuntimeConfig Cache<K, V, Hash, KeyEqual>::MakeConfig(
    const CacheOptions& options) {
  return {.who = kWho,
          .tick = options.resolution,
          .tick_name = "resolution",
          .shards = ShardCount(options),
          .workers = 0,
          .clock = options.clock,
          .on_error = nullptr};
}

template <typename K, typename V, typename Hash, typename KeyEqual>
Cache<K, V, Hash, KeyEqual>::Cache(Duration ttl, CacheOptions options)
    : ttl_(internal::RequirePositive(ttl, kWho, "ttl")),
      jitter_(internal::RequireInRange(options.jitter, 0.0, 1.0, "[0, 1)",
                                       kWho, "jitter")),
      name_(std::move(options.name)),
      report_(std::move(options.report)),
      on_error_(std::move(options.on_error)),
      runtime_(MakeConfig(options), nullptr) {
  const std::size_t shards = runtime_.shard_count();
  for (std::size_t i = 0; i < shards && options.limit != 0; ++i) {
    Shard& shard = runtime_.shard(i);
    internal::MutexLock lock(shard.mutex);
    // The limit is split exactly: the shards' limits add up to it, and
    // each is at least 1 (there are no more shards than the limit).
    shard.state.limit =
        options.limit / shards + (i < options.limit % shards ? 1 : 0);
  }
  if (options.report_interval > Duration::zero()) {
    reporter_ = std::make_unique<internal::PeriodicThread>(
        runtime_.clock(), options.report_interval, [this] { Report(); });
  }
}

template <typename K, typename V, typename Hash, typename KeyEqual>
Cache<K, V, Hash, KeyEqual>::~Cache() {
  reporter_.reset();
  runtime_.Stop();  // no timer fires after this
}

template <typename K, typename V, typename Hash, typename KeyEqual>
std::optional<V> Cache<K, V, Hash, KeyEqual>::Get(const K& key) {
  const TimePoint now = runtime_.clock().Now();
  Shard& shard = runtime_.ShardFor(Hash{}(key));
  Garbage expired;  // destroyed after the unlock
  internal::MutexLock lock(shard.mutex);
  if (Entry* entry = FindLive(shard.state, key, now, expired)) {
    ++shard.state.counts.hits;
    return entry->value;
  }
  ++shard.state.counts.misses;
  return std::nullopt;
}

template <typename K, typename V, typename Hash, typename KeyEqual>
void Cache<K, V, Hash, KeyEqual>::Set(const K& key, V value) {
  Set(key, std::move(value), ttl_);
}

template <typename K, typename V, typename Hash, typename KeyEqual>
void Cache<K, V, Hash, KeyEqual>::Set(const K& key, V value, Duration ttl) {
  internal::RequirePositive(ttl, kWho, "ttl");
  const TimePoint now = runtime_.clock().Now();
  const std::size_t hash = Hash{}(key);
  Shard& shard = runtime_.ShardFor(hash);
  // The value replaced (swapped into `value`) and the entry evicted die
  // after the unlock.
  Garbage evicted;
  internal::MutexLock lock(shard.mutex);
  Set(shard, key, hash, value, ttl, now, evicted);
}

template <typename K, typename V, typename Hash, typename KeyEqual>
bool Cache<K, V, Hash, KeyEqual>::Del(const K& key) {
  const TimePoint now = runtime_.clock().Now();
  Shard& shard = runtime_.ShardFor(Hash{}(key));
  Garbage removed;  // destroyed after the unlock
  internal::MutexLock lock(shard.mutex);
  State& state = shard.state;
  auto it = state.map.find(key);
  if (it == state.map.end()) return false;
  const bool live = now < it->second.expires_at;
  state.Erase(it, removed);
  return live;
}

template <typename K, typename V, typename Hash, typename KeyEqual>
template <typename Fetch>
V Cache<K, V, Hash, KeyEqual>::Take(const K& key, Fetch&& fetch) {
  const TimePoint now = runtime_.clock().Now();
  const std::size_t hash = Hash{}(key);
  Shard& shard = runtime_.ShardFor(hash);
  // What leaves the shard (an expired entry, an evicted one, the value a
  // racing Set stored) dies after the unlock, as does `stored`.
  Garbage expired;
  Garbage evicted;
  std::optional<V> stored;
  internal::MutexLock lock(shard.mutex);
  if (Entry* entry = FindLive(shard.state, key, now, expired)) {
    ++shard.state.counts.hits;
    return entry->value;
  }
  ++shard.state.counts.misses;
  if (auto it = shard.state.fetches.find(key); it != shard.state.fetches.end()) {
    std::shared_future<V> pending = it->second;
    lock.Unlock();
    return pending.get();  // a copy, or the fetcher's exception
  }
  std::promise<V> promise;
  shard.state.fetches.emplace(key, promise.get_future().share());
  lock.Unlock();
  std::optional<V> value;
  try {
    value.emplace(std::forward<Fetch>(fetch)());
    stored.emplace(*value);  // the copy to cache, made before the lock
  } catch (...) {
    lock.Lock();
    shard.state.fetches.erase(key);
    lock.Unlock();
    promise.set_exception(std::current_exception());
    throw;
  }
  lock.Lock();
  // Cached and no longer in flight in one step: a Get right after this Take
  // sees the value.
  shard.state.fetches.erase(key);
  try {
    Set(shard, key, hash, *stored, ttl_, runtime_.clock().Now(), evicted);
  } catch (...) {
    lock.Unlock();
    promise.set_exception(std::current_exception());
    throw;
  }
  lock.Unlock();
  promise.set_value(*value);
  return std::move(*value);
}

template <typename K, typename V, typename Hash, typename KeyEqual>
CacheStats Cache<K, V, Hash, KeyEqual>::stats() const {
  CacheStats total;
  for (std::size_t i = 0; i < runtime_.shard_count(); ++i) {
    Shard& shard = runtime_.shard(i);
    internal::MutexLock lock(shard.mutex);
    const CacheStats& counts = shard.state.counts;
    total.hits += counts.hits;
    total.misses += counts.misses;
    total.evictions += counts.evictions;
    total.expirations += counts.expirations;
    total.size += shard.state.map.size();
  }
  return total;
}

template <typename K, typename V, typename Hash, typename KeyEqual>
std::size_t Cache<K, V, Hash, KeyEqual>::size() const {
  std::size_t size = 0;
  for (std::size_t i = 0; i < runtime_.shard_count(); ++i) {
    Shard& shard = runtime_.shard(i);
    internal::MutexLock lock(shard.mutex);
    size += shard.state.map.size();
  }
  return size;
}

template <typename K, typename V, typename Hash, typename KeyEqual>
auto Cache<K, V, Hash, KeyEqual>::FindLive(State& state, const K& key,
                                           TimePoint now, Garbage& expired)
    -> Entry* {
  auto it = state.map.find(key);
  if (it == state.map.end()) return nullptr;
  if (now >= it->second.expires_at) {
    // Expired, its timer not yet run: never returned; freed now.
    state.Erase(it, expired);
    ++state.counts.expirations;
    return nullptr;
  }
  if (state.limit != 0) state.lru.MoveToFront(&*it);
  return &it->second;
}

template <typename K, typename V, typename Hash, typename KeyEqual>
void Cache<K, V, Hash, KeyEqual>::Set(Shard& shard, const K& key,
                                      std::size_t hash, V& value, Duration ttl,
                                      TimePoint now, Garbage& evicted) {
  State& state = shard.state;
  const TimePoint expires_at = internal::DeadlineAt(now, Jittered(hash, ttl));
  if (auto it = state.map.find(key); it != state.map.end()) {
    Entry& entry = it->second;
    // A later expiry leaves the timer alone (no wheel operation): when it
    // fires early, it is re-armed for the rest. An earlier one moves it.
    if (expires_at < entry.timer_at) {
      state.wheel.Reschedule(entry.timer, expires_at);  // may throw: unmoved
      entry.timer_at = expires_at;
      runtime_.Notify(expires_at);
    }
    using std::swap;
    swap(entry.value, value);  // the old value leaves with the caller's
    entry.expires_at = expires_at;
    if (state.limit != 0) state.lru.MoveToFront(&*it);
    return;
  }
  // Every allocation before anything changes, so that a failure leaves
  // `value` with the caller: buckets for one more entry (an insert that
  // rehashed could fail after taking the value), the timer, the node.
  if (static_cast<double>(state.map.size() + 1) >=
      static_cast<double>(state.map.bucket_count()) *
          state.map.max_load_factor()) {
    state.map.reserve(state.map.size() + 2);
  }
  std::optional<K>& wheel_key = evicted.wheel_key;
  wheel_key.emplace(key);
  TimerId timer;
  if constexpr (std::is_nothrow_move_constructible_v<K>) {
    timer = internal::WheelAccess::ScheduleFrom(state.wheel, expires_at,
                                                *wheel_key);
  } else {
    timer = state.wheel.Schedule(expires_at, *wheel_key);
  }
  typename Map::iterator it;
  try {
    it = state.map.try_emplace(key, std::move(value), expires_at, timer).first;
  } catch (...) {
    if constexpr (std::is_nothrow_move_constructible_v<K>) {
      wheel_key = internal::WheelAccess::Take(state.wheel, timer);
    } else {
      state.wheel.Cancel(timer);
    }
    throw;
  }
  runtime_.Notify(expires_at);
  if (state.limit == 0) return;
  state.lru.PushFront(&*it);
  if (state.map.size() > state.limit) {
    Node* oldest = state.lru.oldest();
    state.Erase(state.map.find(oldest->first), evicted);
    ++state.counts.evictions;
  }
}

template <typename K, typename V, typename Hash, typename KeyEqual>
std::optional<TimePoint> Cache<K, V, Hash, KeyEqual>::State::Advance(
    TimePoint now, std::vector<Expired>& expired) {
  internal::ReserveOneMore(expired);
  wheel.Advance(now, [&](K&& key) {
    auto it = map.find(key);
    if (it == map.end()) return;  // never: an entry's timer goes with it
    Entry& entry = it->second;
    if (now < entry.expires_at) {
      // Set moved the expiry on since the timer was armed: follow it (the
      // timer that fired is gone already). Out of memory for a timer, the
      // entry goes now rather than never.
      try {
        if constexpr (std::is_nothrow_move_constructible_v<K>) {
          entry.timer = internal::WheelAccess::ScheduleFrom(
              wheel, entry.expires_at, key);
        } else {
          entry.timer = wheel.Schedule(entry.expires_at, std::move(key));
        }
        entry.timer_at = entry.expires_at;
        return;
      } catch (...) {
      }
    }
    // Fired: the map node and the timer's key leave for the timer thread
    // to destroy under no lock.
    if (limit != 0) lru.Remove(&*it);
    expired.push_back(Expired{map.extract(it), std::move(key)});
    ++counts.expirations;
    internal::ReserveOneMore(expired);  // may throw: this one is safe
  });
  return wheel.NextDeadline();
}

template <typename K, typename V, typename Hash, typename KeyEqual>
Duration Cache<K, V, Hash, KeyEqual>::Jittered(std::size_t hash,
                                               Duration ttl) const {
  if (jitter_ == 0.0) return ttl;
  // splitmix64's finalizer: independent of the bits that chose the shard.
  std::uint64_t h = hash;
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebULL;
  h ^= h >> 31;
  const double unit = static_cast<double>(h >> 11) * 0x1.0p-53;  // [0, 1)
  const double factor = 1.0 - jitter_ + 2.0 * jitter_ * unit;
  // Clamped so that now + ttl cannot overflow.
  const double ns = std::min(static_cast<double>(ttl.count()) * factor,
                             static_cast<double>(Duration::max().count() / 4));
  return std::max(Duration(static_cast<Duration::rep>(ns)), Duration(1));
}

template <typename K, typename V, typename Hash, typename KeyEqual>
void Cache<K, V, Hash, KeyEqual>::Report() {
  const CacheStats now = stats();
  CacheStats interval = now;
  interval.hits -= reported_.hits;
  interval.misses -= reported_.misses;
  interval.evictions -= reported_.evictions;
  interval.expirations -= reported_.expirations;
  reported_ = now;
  if (report_) {
    try {
      report_(interval);
    } catch (...) {
      // Counted and reported like the runtime's other callbacks (counted
      // first: on_error sees itself in callback_errors()); the next
      // interval is reported as usual.
      report_errors_.fetch_add(1, std::memory_order_relaxed);
      internal::ReportError(kWho, on_error_, std::current_exception());
    }
    return;
  }
  std::fprintf(stderr,
               "tickwheel cache(%s): lookups %llu, hit ratio %.1f%%, "
               "elements %zu, hits %llu, misses %llu, evictions %llu, "
               "expirations %llu\n",
               name_.c_str(),
               static_cast<unsigned long long>(interval.hits + interval.misses),
               100.0 * interval.hit_ratio(), interval.size,
               static_cast<unsigned long long>(interval.hits),
               static_cast<unsigned long long>(interval.misses),
               static_cast<unsigned long long>(interval.evictions),
               static_cast<unsigned long long>(interval.expirations));
}

}  // namespace tickwheel

#endif  // TICKWHEEL_CACHE_H_
