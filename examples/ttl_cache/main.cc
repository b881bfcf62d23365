// SPDX-License-Identifier: Apache-2.0
// ttl_cache: a Cache in front of a slow lookup. Several threads ask for keys
// with a skewed (Zipf) popularity, as real traffic does; popular keys are
// served from the cache, and each key's entry expires after its TTL so the
// data stays fresh. Prints the hit ratio and what the cache saved.
//
//   build/examples/ttl_cache/ttl_cache [--requests N] [--threads N]
//       [--keys N] [--ttl-ms N] [--lookup-us N]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/flags.h"
#include "tickwheel/cache.h"

namespace {

struct Args {
  long long requests = 100'000;  // per thread
  long long threads = 4;
  long long keys = 10'000;
  long long ttl_ms = 500;
  long long lookup_us = 200;
};

Args ParseArgs(int argc, char** argv) {
  Args args;
  tickwheel::examples::Flags()
      .Positive("--requests", &args.requests)
      .Positive("--threads", &args.threads)
      .Positive("--keys", &args.keys)
      .Positive("--ttl-ms", &args.ttl_ms)
      .Positive("--lookup-us", &args.lookup_us)
      .Parse(argc, argv);
  return args;
}

// Draws key k with probability proportional to 1 / (k + 1).
class Zipf {
 public:
  explicit Zipf(int n) : cdf_(static_cast<std::size_t>(n)) {
    double sum = 0;
    for (int k = 0; k < n; ++k) {
      sum += 1.0 / (k + 1);
      cdf_[static_cast<std::size_t>(k)] = sum;
    }
    for (double& c : cdf_) c /= sum;
  }
  int operator()(std::mt19937& random) const {
    const double u = std::uniform_real_distribution<double>(0, 1)(random);
    return static_cast<int>(std::lower_bound(cdf_.begin(), cdf_.end(), u) -
                            cdf_.begin());
  }

 private:
  std::vector<double> cdf_;
};

}  // namespace

int main(int argc, char** argv) try {
  const Args args = ParseArgs(argc, argv);
  const auto lookup_time = std::chrono::microseconds(args.lookup_us);
  std::atomic<long> lookups{0};
  // The slow backend: a remote service or a database query.
  auto slow_lookup = [&](int key) {
    ++lookups;
    std::this_thread::sleep_for(lookup_time);
    return "profile of user " + std::to_string(key);
  };

  tickwheel::Cache<int, std::string> cache(
      std::chrono::milliseconds(args.ttl_ms),
      {.report_interval = std::chrono::seconds(1), .name = "profiles"});
  const Zipf zipf(static_cast<int>(args.keys));

  std::printf(
      "ttl_cache: %lld threads x %lld requests over %lld keys (Zipf), TTL %lld "
      "ms, lookup %lld us\n",
      args.threads, args.requests, args.keys, args.ttl_ms, args.lookup_us);
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  std::atomic<long> wrong{0};
  for (long long t = 0; t < args.threads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 random(static_cast<unsigned>(t) + 1);
      for (long long i = 0; i < args.requests; ++i) {
        const int key = zipf(random);
        const std::string profile =
            cache.Take(key, [&] { return slow_lookup(key); });
        if (profile != "profile of user " + std::to_string(key)) ++wrong;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();

  const tickwheel::CacheStats stats = cache.stats();
  const long long requests = args.requests * args.threads;
  const double uncached = static_cast<double>(requests) *
                          std::chrono::duration<double>(lookup_time).count() /
                          static_cast<double>(args.threads);
  std::printf("  requests            %lld\n", requests);
  std::printf("  backend lookups     %ld\n", lookups.load());
  std::printf("  hit ratio           %.1f%% (%llu hits, %llu misses)\n",
              100.0 * stats.hit_ratio(),
              static_cast<unsigned long long>(stats.hits),
              static_cast<unsigned long long>(stats.misses));
  std::printf("  expired entries     %llu, held now %zu\n",
              static_cast<unsigned long long>(stats.expirations), stats.size);
  std::printf(
      "  elapsed             %.2f s (at least %.2f s without the cache)\n",
      elapsed, uncached);
  if (wrong != 0) {
    std::fprintf(stderr, "%ld wrong answers\n", wrong.load());
    return 1;
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "ttl_cache: %s\n", e.what());
  return 2;
}
