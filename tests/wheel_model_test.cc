// SPDX-License-Identifier: Apache-2.0
// Model-based test of Wheel<T>: long random sequences of Schedule, Cancel,
// Reschedule and Advance, with time jumps from nothing to centuries, checked
// against a plain reference (a map of pending timers and their due ticks)
// and the wheel's own invariant checker, also in bursts of hundreds of
// Cancels and Reschedules between looks at the wheel. The model and what it
// asserts are
// in wheel_model.h, which the fuzzer (tests/fuzz/wheel_fuzz.cc) shares; here
// its choices come from seeded RNGs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <string>

#include "wheel_model.h"

namespace tickwheel {
namespace {

using testing::Int128;
using testing::RandomSource;
using testing::WheelModel;

class WheelModelTest : public ::testing::TestWithParam<std::int64_t> {};

TEST_P(WheelModelTest, RandomOperationsMatchTheReference) {
  const std::int64_t tick_ns = GetParam();
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 pick(seed);
    // Origins at zero, at a typical steady_clock reading, and near the end
    // of the representable range (so clamping is exercised).
    const std::int64_t origins[] = {
        0, 3'600'000'000'000 + static_cast<std::int64_t>(pick() % 1000),
        static_cast<std::int64_t>(
            std::numeric_limits<std::int64_t>::max() -
            std::min<Int128>(Int128{tick_ns} << 40,
                             std::numeric_limits<std::int64_t>::max() / 2))};
    WheelModel<RandomSource> model(RandomSource(seed), tick_ns,
                                   origins[seed % 3]);
    model.Run(2500);
    ASSERT_EQ(model.failure(), "");
  }
}

// Thousands of timers within a few level-1 revolutions, time moving a few
// ticks at a time: most slots that come up have been partly moved down by
// earlier Advances.
TEST_P(WheelModelTest, DenseTimersWithSmallStepsMatchTheReference) {
  const std::int64_t tick_ns = GetParam();
  for (std::uint64_t seed = 1; seed <= 12; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    WheelModel<RandomSource> model(RandomSource(seed), tick_ns,
                                   3'600'000'000'000 + 17, {.dense = true});
    model.Run(6000);
    ASSERT_EQ(model.failure(), "");
  }
}

// Hundreds of Cancels and Reschedules between Advances: the slot work they
// queue is applied in full batches, in any order with Schedules, and stale
// ids (including ones cancelled a moment ago, whose unlink is still queued)
// are refused.
TEST_P(WheelModelTest, BurstsOfCancelsAndMovesMatchTheReference) {
  const std::int64_t tick_ns = GetParam();
  for (std::uint64_t seed = 1; seed <= 12; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    WheelModel<RandomSource> model(RandomSource(seed), tick_ns, 3'600'000'000'000 + 5,
                                   {.dense = seed % 2 == 0});
    model.RunBursts(60);
    ASSERT_EQ(model.failure(), "");
  }
}

INSTANTIATE_TEST_SUITE_P(Ticks, WheelModelTest,
                         ::testing::Values(1, 1000, 1'000'000, 7'000'000,
                                           1'000'000'000),
                         [](const auto& param_info) {
                           return std::to_string(param_info.param) + "ns";
                         });

}  // namespace
}  // namespace tickwheel
