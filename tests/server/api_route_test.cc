// SPDX-License-Identifier: Apache-2.0
// MatchRoute (server/api/api.h): which route a path is, and the id in it,
// percent-decoded; the action suffixes matched before the id is decoded.
#include <gtest/gtest.h>

#include "api/api.h"

namespace tickwheel::server {
namespace {

TEST(ApiRouteTest, TheIdOfEveryIdRouteIsPercentDecoded) {
  struct Case {
    const char* path;
    Route::Kind kind;
    const char* id;
  };
  const Case cases[] = {
      {"/v1/timers/a%40123", Route::Kind::kTimer, "a@123"},
      {"/v1/timers/a@123", Route::Kind::kTimer, "a@123"},
      {"/v1/timers/%61b%2dc", Route::Kind::kTimer, "ab-c"},
      {"/v1/timers/a%40123:retry", Route::Kind::kTimerRetry, "a@123"},
      {"/v1/schedules/r%65port", Route::Kind::kSchedule, "report"},
      {"/v1/schedules/r%65port:pause", Route::Kind::kSchedulePause, "report"},
      {"/v1/schedules/r%65port:resume", Route::Kind::kScheduleResume, "report"},
      {"/v1/schedules/r%65port:trigger", Route::Kind::kScheduleTrigger, "report"},
      {"/v1/schedules/r%65port:backfill", Route::Kind::kScheduleBackfill, "report"},
      // '+' is itself in a path (a query's form encoding makes it a space).
      {"/v1/timers/a+b", Route::Kind::kTimer, "a+b"},
      // An encoded colon is part of the id, not an action.
      {"/v1/schedules/x%3Apause", Route::Kind::kSchedule, "x:pause"},
      {"/v1/timers/x%3Aretry", Route::Kind::kTimer, "x:retry"},
      {"/v1/timers/a%2Fb", Route::Kind::kTimer, "a/b"},
  };
  for (const Case& c : cases) {
    const Route r = MatchRoute(c.path);
    EXPECT_EQ(r.kind, c.kind) << c.path;
    EXPECT_EQ(r.id, c.id) << c.path;
    EXPECT_FALSE(r.malformed_id) << c.path;
  }
}

TEST(ApiRouteTest, AMalformedEscapeIsMarkedNotGuessed) {
  for (const char* path : {"/v1/timers/a%4", "/v1/timers/a%zz", "/v1/timers/%",
                           "/v1/schedules/a%G1:pause", "/v1/schedules/a%"}) {
    const Route r = MatchRoute(path);
    EXPECT_TRUE(r.malformed_id) << path;
    EXPECT_NE(r.kind, Route::Kind::kNone) << path;
  }
  EXPECT_FALSE(MatchRoute("/v1/timers/a%25").malformed_id);
  EXPECT_EQ(MatchRoute("/v1/timers/a%25").id, "a%");
}

TEST(ApiRouteTest, PathsWithoutAnIdAreUnchanged) {
  EXPECT_EQ(MatchRoute("/v1/timers").kind, Route::Kind::kTimers);
  EXPECT_EQ(MatchRoute("/v1/timers:batch").kind, Route::Kind::kBatch);
  EXPECT_EQ(MatchRoute("/v1/schedules").kind, Route::Kind::kSchedules);
  EXPECT_EQ(MatchRoute("/v1/timers%3Abatch").kind, Route::Kind::kNone);
  EXPECT_EQ(MatchRoute("/healthz").kind, Route::Kind::kHealth);
}

}  // namespace
}  // namespace tickwheel::server
