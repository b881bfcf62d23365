// SPDX-License-Identifier: Apache-2.0
// The benchmark's random numbers: fast, seeded, the same for every backend.
#ifndef TICKWHEEL_BENCH_CORE_RANDOM_H_
#define TICKWHEEL_BENCH_CORE_RANDOM_H_

#include <cstdint>

namespace tickwheel::bench {

// SplitMix64. Below(n) maps 64 random bits to [0, n) by multiply-high.
class Random {
 public:
  explicit Random(std::uint64_t seed) : state_(seed) {}
  std::uint64_t Next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  std::uint64_t Below(std::uint64_t n) {
    __extension__ using U128 = unsigned __int128;
    return static_cast<std::uint64_t>((static_cast<U128>(Next()) * n) >> 64);
  }
  // Uniform in [lo, hi].
  std::int64_t Between(std::int64_t lo, std::int64_t hi) {
    return lo + static_cast<std::int64_t>(
                    Below(static_cast<std::uint64_t>(hi - lo) + 1));
  }

 private:
  std::uint64_t state_;
};

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_BENCH_CORE_RANDOM_H_
