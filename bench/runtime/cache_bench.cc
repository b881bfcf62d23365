// SPDX-License-Identifier: Apache-2.0
// Cache Get and Set throughput at 1M keys with 1, 2 and 4 threads:
// tickwheel::Cache against TtlMapBaseline (mutex + unordered_map + multimap),
// side by side in one run. Keys are drawn uniformly; every Get hits (the TTL
// is an hour); every Set refreshes an existing key's value and expiry.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>

#include "tickwheel/cache.h"
#include "ttl_map_baseline.h"

namespace tickwheel::bench {
namespace {

constexpr std::uint64_t kKeys = 1'000'000;
constexpr auto kTtl = std::chrono::hours(1);

// A fast per-thread generator; the benchmark measures the caches, not this.
class XorShift {
 public:
  explicit XorShift(std::uint64_t seed)
      : state_(seed * 0x9e3779b97f4a7c15ULL + 1) {}
  std::uint64_t Key() {
    state_ ^= state_ << 13;
    state_ ^= state_ >> 7;
    state_ ^= state_ << 17;
    return state_ % kKeys;
  }

 private:
  std::uint64_t state_;
};

template <typename C>
C& Populated() {
  static C* cache = [] {
    auto* c = new C(kTtl);  // lives for the whole process
    for (std::uint64_t k = 0; k < kKeys; ++k) c->Set(k, k);
    return c;
  }();
  return *cache;
}

using TickwheelCache = Cache<std::uint64_t, std::uint64_t>;
using Baseline = TtlMapBaseline<std::uint64_t, std::uint64_t>;

template <typename C>
void BM_Get(benchmark::State& state) {
  C& cache = Populated<C>();
  XorShift random(static_cast<std::uint64_t>(state.thread_index()) + 1);
  std::uint64_t hits = 0;
  for (auto _ : state) {
    hits += cache.Get(random.Key()).has_value() ? 1 : 0;
  }
  benchmark::DoNotOptimize(hits);
  if (hits != static_cast<std::uint64_t>(state.iterations())) {
    state.SkipWithError("a Get missed");
  }
  state.SetItemsProcessed(state.iterations());
}

template <typename C>
void BM_Set(benchmark::State& state) {
  C& cache = Populated<C>();
  XorShift random(static_cast<std::uint64_t>(state.thread_index()) + 101);
  std::uint64_t i = 0;
  for (auto _ : state) {
    const std::uint64_t key = random.Key();
    cache.Set(key, key + ++i);
  }
  state.SetItemsProcessed(state.iterations());
}

BENCHMARK(BM_Get<TickwheelCache>)
    ->Name("cache/get/tickwheel")
    ->Threads(1)
    ->Threads(2)
    ->Threads(4)
    ->UseRealTime();
BENCHMARK(BM_Get<Baseline>)
    ->Name("cache/get/mutex_map_multimap")
    ->Threads(1)
    ->Threads(2)
    ->Threads(4)
    ->UseRealTime();
BENCHMARK(BM_Set<TickwheelCache>)
    ->Name("cache/set/tickwheel")
    ->Threads(1)
    ->Threads(2)
    ->Threads(4)
    ->UseRealTime();
BENCHMARK(BM_Set<Baseline>)
    ->Name("cache/set/mutex_map_multimap")
    ->Threads(1)
    ->Threads(2)
    ->Threads(4)
    ->UseRealTime();

}  // namespace
}  // namespace tickwheel::bench

BENCHMARK_MAIN();
