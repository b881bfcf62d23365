// SPDX-License-Identifier: Apache-2.0
// The TTL cache people write by hand: one std::mutex, a std::unordered_map of
// entries and a std::multimap ordered by expiry. The peer of tickwheel::Cache
// in cache_bench.cc.
#ifndef TICKWHEEL_BENCH_RUNTIME_TTL_MAP_BASELINE_H_
#define TICKWHEEL_BENCH_RUNTIME_TTL_MAP_BASELINE_H_

#include <chrono>
#include <cstddef>
#include <map>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>

namespace tickwheel::bench {

// Get checks the expiry (an expired entry is never returned); Set refreshes
// it in the multimap and frees a few expired entries from its front, so
// memory stays bounded without a background thread.
template <typename K, typename V>
class TtlMapBaseline {
 public:
  using Clock = std::chrono::steady_clock;

  explicit TtlMapBaseline(Clock::duration ttl) : ttl_(ttl) {}

  std::optional<V> Get(const K& key) {
    const Clock::time_point now = Clock::now();
    std::lock_guard lock(mutex_);
    auto it = map_.find(key);
    if (it == map_.end()) return std::nullopt;
    if (now >= it->second.expiry->first) {
      by_expiry_.erase(it->second.expiry);
      map_.erase(it);
      return std::nullopt;
    }
    return it->second.value;
  }

  void Set(const K& key, V value) {
    const Clock::time_point now = Clock::now();
    std::lock_guard lock(mutex_);
    PurgeSome(now);
    auto it = map_.find(key);
    if (it != map_.end()) {
      by_expiry_.erase(it->second.expiry);
      it->second.value = std::move(value);
      it->second.expiry = by_expiry_.emplace(now + ttl_, key);
      return;
    }
    map_.emplace(key,
                 Entry{std::move(value), by_expiry_.emplace(now + ttl_, key)});
  }

  std::size_t size() {
    std::lock_guard lock(mutex_);
    return map_.size();
  }

 private:
  using ByExpiry = std::multimap<Clock::time_point, K>;
  struct Entry {
    V value;
    typename ByExpiry::iterator expiry;
  };

  // Frees up to two expired entries per Set: amortized, never a long pause.
  void PurgeSome(Clock::time_point now) {
    for (int i = 0; i < 2 && !by_expiry_.empty(); ++i) {
      auto oldest = by_expiry_.begin();
      if (oldest->first > now) return;
      map_.erase(oldest->second);
      by_expiry_.erase(oldest);
    }
  }

  const Clock::duration ttl_;
  std::mutex mutex_;
  std::unordered_map<K, Entry> map_;  // guarded by mutex_
  ByExpiry by_expiry_;                // guarded by mutex_
};

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_BENCH_RUNTIME_TTL_MAP_BASELINE_H_
