// SPDX-License-Identifier: Apache-2.0
#include "tickwheel/timer_id.h"

#include <gtest/gtest.h>

#include <unordered_set>

namespace tickwheel {
namespace {

using internal::TimerIdCodec;

TEST(TimerIdTest, DefaultConstructedIsInvalid) {
  TimerId id;
  EXPECT_FALSE(id.valid());
  EXPECT_EQ(id, TimerId());
  EXPECT_TRUE(TimerIdCodec::Make(0, 1).valid());
}

TEST(TimerIdTest, EqualityAndHashTellGenerationsApart) {
  const TimerId a = TimerIdCodec::Make(5, 1);
  const TimerId b = TimerIdCodec::Make(5, 2);
  EXPECT_NE(a, b);
  EXPECT_EQ(a, TimerIdCodec::Make(5, 1));
  std::unordered_set<TimerId> set{a, b, TimerIdCodec::Make(6, 1)};
  EXPECT_EQ(set.size(), 3u);
  EXPECT_TRUE(set.contains(TimerIdCodec::Make(5, 2)));
}

}  // namespace
}  // namespace tickwheel
