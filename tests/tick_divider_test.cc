// SPDX-License-Identifier: Apache-2.0
#include "tickwheel/internal/tick_divider.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>

namespace tickwheel::internal {
namespace {

constexpr std::uint64_t kMaxDividend = (std::uint64_t{1} << 63) - 1;

TEST(TickDividerTest, MatchesDivisionAtTheEdges) {
  const std::uint64_t divisors[] = {1,          2,          3,
                                    7,          1000,       1000000,
                                    999999937,  1u << 31,   (1ull << 32) + 1,
                                    1ull << 62, kMaxDividend};
  // (Divisors are ticks: positive int64 nanoseconds, so below 2^63.)
  for (std::uint64_t d : divisors) {
    const TickDivider divider(d);
    for (std::uint64_t n : {std::uint64_t{0}, std::uint64_t{1}, d - 1, d,
                            d + 1, 2 * d - 1, kMaxDividend - 1, kMaxDividend}) {
      if (n > kMaxDividend) continue;
      EXPECT_EQ(divider.Divide(n), n / d) << n << " / " << d;
    }
  }
}

TEST(TickDividerTest, MatchesDivisionOnRandomValues) {
  std::mt19937_64 rng(42);
  for (int i = 0; i < 2000; ++i) {
    // Divisors and dividends of every magnitude below 2^63.
    const std::uint64_t d = ((rng() >> 1) >> (rng() % 63)) | 1;
    const TickDivider divider(d);
    for (int j = 0; j < 200; ++j) {
      const std::uint64_t n = (rng() >> 1) >> (rng() % 63);
      ASSERT_EQ(divider.Divide(n), n / d) << n << " / " << d;
    }
  }
}

}  // namespace
}  // namespace tickwheel::internal
