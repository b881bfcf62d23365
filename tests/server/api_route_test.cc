// SPDX-License-Identifier: Apache-2.0
// MatchRoute (server/api/route.h): which route a path is, and the id in it,
// percent-decoded; the action suffixes matched before the id is decoded.
// Every route kind's methods (AllowedMethods, what Admit answers 405 by)
// and metrics template (RouteTemplate).
#include <gtest/gtest.h>

#include <iterator>

#include "api/route.h"

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

TEST(ApiRouteTest, EveryRouteListsItsMethodsAndHasItsOwnTemplate) {
  struct Case {
    const char* path;
    Route::Kind kind;
    const char* methods;
    const char* route_template;
  };
  // One per route kind (kNone aside), each matched from a path.
  const Case cases[] = {
      {"/healthz", Route::Kind::kHealth, "GET", "/healthz"},
      {"/metrics", Route::Kind::kMetrics, "GET", "/metrics"},
      {"/v1/whoami", Route::Kind::kWhoami, "GET", "/v1/whoami"},
      {"/v1/timers", Route::Kind::kTimers, "GET, POST", "/v1/timers"},
      {"/v1/timers:batch", Route::Kind::kBatch, "POST", "/v1/timers:batch"},
      {"/v1/timers/a", Route::Kind::kTimer, "GET, PATCH, DELETE", "/v1/timers/{id}"},
      {"/v1/timers/a:retry", Route::Kind::kTimerRetry, "POST", "/v1/timers/{id}:retry"},
      {"/v1/timers:retry-failed", Route::Kind::kRetryFailed, "POST", "/v1/timers:retry-failed"},
      {"/v1/timers:delete-failed", Route::Kind::kDeleteFailed, "POST",
       "/v1/timers:delete-failed"},
      {"/v1/stats", Route::Kind::kStats, "GET", "/v1/stats"},
      {"/v1/stats/series", Route::Kind::kStatsSeries, "GET", "/v1/stats/series"},
      {"/v1/cluster", Route::Kind::kCluster, "GET", "/v1/cluster"},
      {"/v1/schedules", Route::Kind::kSchedules, "GET, POST", "/v1/schedules"},
      {"/v1/schedules/a", Route::Kind::kSchedule, "GET, PATCH, DELETE", "/v1/schedules/{id}"},
      {"/v1/schedules/a:pause", Route::Kind::kSchedulePause, "POST", "/v1/schedules/{id}:pause"},
      {"/v1/schedules/a:resume", Route::Kind::kScheduleResume, "POST",
       "/v1/schedules/{id}:resume"},
      {"/v1/schedules/a:trigger", Route::Kind::kScheduleTrigger, "POST",
       "/v1/schedules/{id}:trigger"},
      {"/v1/schedules/a:backfill", Route::Kind::kScheduleBackfill, "POST",
       "/v1/schedules/{id}:backfill"},
      {"/v1/flows", Route::Kind::kFlows, "GET", "/v1/flows"},
      {"/v1/flows/a", Route::Kind::kFlow, "GET, PUT, DELETE", "/v1/flows/{key}"},
      {"/v1/flows/a:pause", Route::Kind::kFlowPause, "POST", "/v1/flows/{key}:pause"},
      {"/v1/flows/a:resume", Route::Kind::kFlowResume, "POST", "/v1/flows/{key}:resume"},
      {"/v1/openapi.json", Route::Kind::kOpenApi, "GET", "/v1/openapi.json"},
      {"/v1/admin/backup", Route::Kind::kAdminBackup, "POST", "/v1/admin/backup"},
      {"/v1/admin/export", Route::Kind::kAdminExport, "GET", "/v1/admin/export"},
      {"/v1/admin/import", Route::Kind::kAdminImport, "POST", "/v1/admin/import"},
      {"/v1/admin/delivery:pause", Route::Kind::kAdminDeliveryPause, "POST",
       "/v1/admin/delivery:pause"},
      {"/v1/admin/delivery:resume", Route::Kind::kAdminDeliveryResume, "POST",
       "/v1/admin/delivery:resume"},
      {"/v1/admin/writes:pause", Route::Kind::kAdminWritesPause, "POST", "/v1/admin/writes:pause"},
      {"/v1/admin/writes:resume", Route::Kind::kAdminWritesResume, "POST",
       "/v1/admin/writes:resume"},
  };
  // Every kind is in the table: the last one is kAdminWritesResume.
  EXPECT_EQ(std::size(cases), static_cast<std::size_t>(Route::Kind::kAdminWritesResume));
  for (const Case& c : cases) {
    const bool admin = std::string_view(c.path).substr(0, 10) == "/v1/admin/";
    EXPECT_EQ(AdminOnly(c.kind), admin) << c.path;
  }
  for (const Case& c : cases) {
    EXPECT_EQ(MatchRoute(c.path).kind, c.kind) << c.path;
    EXPECT_STREQ(AllowedMethods(c.kind), c.methods) << c.path;
    EXPECT_EQ(RouteTemplate(c.kind), c.route_template) << c.path;
  }
  EXPECT_STREQ(AllowedMethods(Route::Kind::kNone), "");
  EXPECT_EQ(RouteTemplate(Route::Kind::kNone), "other");
}

}  // namespace
}  // namespace tickwheel::server
