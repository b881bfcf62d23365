// SPDX-License-Identifier: Apache-2.0
// TimerShard, the state machine behind TimerService's timers, driven
// directly: what its entries go through, and the corners the service
// cannot reach in a test's time (a generation that wraps).
#include "tickwheel/internal/timer_shard.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

namespace tickwheel::internal {
namespace {

using std::chrono::milliseconds;

const TimePoint kStart{std::chrono::hours(1)};

// Fires everything due at `now` and returns what the shard queued.
std::vector<TimerShard::Fired> AdvanceTo(TimerShard& shard, TimePoint now) {
  std::vector<TimerShard::Fired> fired;
  shard.Advance(now, fired);
  return fired;
}

// A repeat cancelled while it runs gets a stale id at once; if that bump
// wraps its generation to 0, the index is retired when the run ends, as
// when Free wraps it: no stale id can name it again. (The cancel bumped the
// generation without that check: the index came back with generation 1,
// and an id from 2^32 generations ago named the new timer.)
TEST(TimerShardTest, CancelOfARunningRepeatWhoseGenerationWrapsRetiresItsIndex) {
  TimerShard shard(milliseconds(1), kStart, 0, 1);
  TimerShard::Callback fn = [] {};
  const TimerId first = shard.Add(kStart + milliseconds(1), milliseconds(1), fn);
  const std::uint32_t index = shard.IndexOf(first);
  // As if the index had been reused 2^32 - 2 times: one bump from wrapping.
  shard.entries[index].generation = std::numeric_limits<std::uint32_t>::max();
  const TimerId id = shard.MakeId(index);

  const std::vector<TimerShard::Fired> fired =
      AdvanceTo(shard, kStart + milliseconds(1));
  ASSERT_EQ(fired.size(), 1u);
  ASSERT_EQ(fired[0].id, id);
  TimerShard::Callback running;
  ASSERT_EQ(shard.TakeToRun(id, running), TimerShard::Start::kRepeat);
  TimerShard::Callback dropped;
  ASSERT_TRUE(shard.Cancel(id, dropped));  // while it runs
  EXPECT_EQ(shard.entries[index].generation, 0u);
  EXPECT_FALSE(shard.Cancel(id, dropped));
  shard.FinishRun(id, running, kStart + milliseconds(1));  // the run ends

  // The index is retired: new timers get other indexes, and an id with
  // the generation the index would have had next names nothing.
  for (int i = 0; i < 3; ++i) {
    TimerShard::Callback other = [] {};
    const TimerId added = shard.Add(kStart + milliseconds(10), Duration::zero(), other);
    EXPECT_NE(shard.IndexOf(added), index);
  }
  EXPECT_EQ(shard.Find(TimerIdCodec::Make(index, 1)), nullptr);
  EXPECT_EQ(shard.live(), 3u);
}

// The same wrap through Free (a cancelled pending timer): retired too.
TEST(TimerShardTest, FreeWhoseGenerationWrapsRetiresItsIndex) {
  TimerShard shard(milliseconds(1), kStart, 0, 1);
  TimerShard::Callback fn = [] {};
  const std::uint32_t index =
      shard.IndexOf(shard.Add(kStart + milliseconds(5), Duration::zero(), fn));
  shard.entries[index].generation = std::numeric_limits<std::uint32_t>::max();
  TimerShard::Callback dropped;
  ASSERT_TRUE(shard.Cancel(shard.MakeId(index), dropped));
  TimerShard::Callback other = [] {};
  EXPECT_NE(shard.IndexOf(shard.Add(kStart + milliseconds(5), Duration::zero(), other)),
            index);
}

}  // namespace
}  // namespace tickwheel::internal
