// SPDX-License-Identifier: Apache-2.0
// FlowRegistry: a refresh from the store never undoes a write this node made
// while the refresh's read was under way.
#include "flow/flow_registry.h"

#include <gtest/gtest.h>

namespace tickwheel::server {
namespace {

FlowSettings Rate(double per_s, bool paused = false) {
  FlowSettings s;
  s.rate_per_s = per_s;
  s.paused = paused;
  return s;
}

TEST(FlowRegistryTest, ARefreshReadBeforeASetKeepsWhatTheSetWrote) {
  FlowRegistry flows;
  flows.Set("api", Rate(200));
  const std::uint64_t read_from = flows.sets();  // a refresh starts reading...
  flows.Set("api", Rate(200, /*paused=*/true));   // ...this node pauses the flow...
  flows.Set("gone", Rate(5));
  flows.Set("gone", std::nullopt);                // ...and deletes another
  // ...and the refresh's read, from before both, lands.
  flows.Replace({{"api", Rate(200)}, {"gone", Rate(5)}, {"other", Rate(7)}}, read_from);
  ASSERT_TRUE(flows.Settings("api").has_value());
  EXPECT_TRUE(flows.Settings("api")->paused);
  EXPECT_FALSE(flows.Configured("gone"));
  EXPECT_EQ(flows.Settings("other"), Rate(7));  // another node's write is taken
}

TEST(FlowRegistryTest, ARefreshReadAfterASetTakesTheStoresSettings) {
  FlowRegistry flows;
  flows.Set("api", Rate(200, /*paused=*/true));
  // Another node resumed it after this node's write; a read after both
  // finds that.
  flows.Replace({{"api", Rate(200)}}, flows.sets());
  EXPECT_FALSE(flows.Settings("api")->paused);
  // And a flow deleted elsewhere goes.
  flows.Replace({}, flows.sets());
  EXPECT_FALSE(flows.Configured("api"));
}

TEST(FlowRegistryTest, ReplacingWithTheSameSettingsKeepsTheVersion) {
  FlowRegistry flows;
  flows.Set("api", Rate(200));
  const std::uint64_t v = flows.version();
  flows.Replace({{"api", Rate(200)}}, flows.sets());
  EXPECT_EQ(flows.version(), v);
  flows.Replace({{"api", Rate(100)}}, flows.sets());
  EXPECT_NE(flows.version(), v);
}

}  // namespace
}  // namespace tickwheel::server
