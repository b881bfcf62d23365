// SPDX-License-Identifier: Apache-2.0
// Division by a divisor fixed at run time, without a divide instruction.
#ifndef TICKWHEEL_INTERNAL_TICK_DIVIDER_H_
#define TICKWHEEL_INTERNAL_TICK_DIVIDER_H_

#include <bit>
#include <cstdint>

namespace tickwheel::internal {

__extension__ using Uint128 = unsigned __int128;  // GCC and Clang

// TickDivider computes n / d for every n < 2^63 with one 64x64->128-bit
// multiply and a shift (Granlund and Montgomery, "Division by invariant
// integers using multiplication", 1994, theorem 4.2 with N = 63). A 64-bit
// divide costs 40-90 cycles on the CPUs we run on; this costs about 5.
//
// With l = ceil(log2 d) and m = ceil(2^(63+l) / d):
//   2^(63+l) <= m*d < 2^(63+l) + d <= 2^(63+l) + 2^l, so
//   floor(n*m / 2^(63+l)) == floor(n / d) for all 0 <= n < 2^63,
// and m < 2^64 because d > 2^(l-1). Computing it as the high word of
// (2n)*m shifted right by l (2n < 2^64) needs no 128-bit shift.
class TickDivider {
 public:
  // REQUIRES: 1 <= d < 2^63 (a tick is a positive int64 of nanoseconds).
  explicit constexpr TickDivider(std::uint64_t d)
      : log2_ceil_(Log2Ceil(d)),
        magic_(static_cast<std::uint64_t>(
            ((static_cast<Uint128>(1) << (63 + log2_ceil_)) - 1) / d + 1)) {}

  // REQUIRES: n < 2^63.
  constexpr std::uint64_t Divide(std::uint64_t n) const {
    const auto high = static_cast<std::uint64_t>(
        (static_cast<Uint128>(2 * n) * magic_) >> 64);
    return high >> log2_ceil_;
  }

 private:
  static constexpr unsigned Log2Ceil(std::uint64_t d) {
    return d <= 1 ? 0 : static_cast<unsigned>(64 - std::countl_zero(d - 1));
  }

  unsigned log2_ceil_;
  std::uint64_t magic_;
};

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_INTERNAL_TICK_DIVIDER_H_
