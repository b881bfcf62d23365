// SPDX-License-Identifier: Apache-2.0
// Parsing and validating the bodies and queries of /v1/schedules
// (docs/schedules.md has the fields and their limits).
#ifndef TICKWHEEL_SERVER_API_SCHEDULE_REQUEST_H_
#define TICKWHEEL_SERVER_API_SCHEDULE_REQUEST_H_

#include <boost/json/value.hpp>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "api/timer_request.h"
#include "common/status.h"
#include "schedule/schedule_record.h"
#include "schedule/schedule_service.h"

namespace tickwheel::server {

inline constexpr std::int64_t kMinEveryMs = 1000;
inline constexpr std::int64_t kMaxJitterMs = 24LL * 3600 * 1000;
inline constexpr std::int64_t kMinCatchUpWindowMs = 1000;
inline constexpr std::int64_t kMaxCatchUpWindowMs = 30LL * 24 * 3600 * 1000;
inline constexpr std::uint32_t kMaxCatchUpMax = 1000;

// POST /v1/schedules: the schedule asked for (not yet planned), with the
// digest of the body's canonical JSON (a repeated create with the same
// body is the same schedule). `delivery` gets what occurrences deliver as
// a TimerSpec, for the SSRF check. The recurrence is compiled, so a bad
// cron expression or time zone is a 400 naming the field.
Result<ScheduleRecord> ParseScheduleCreate(const boost::json::value& body, const ApiLimits& limits,
                                           std::int64_t now_ms, TimerSpec& delivery);

// PATCH /v1/schedules/{id}: the fields to change (null removes start_ms,
// end_ms, max_occurrences). `delivery`: set when the body has a target.
// kInvalidArgument for an empty patch, an unknown field, a bad value.
Result<SchedulePatch> ParseSchedulePatch(const boost::json::value& body, const ApiLimits& limits,
                                         std::int64_t now_ms, std::optional<TimerSpec>& delivery);

// POST /v1/schedules/{id}:backfill: {"from_ms", "to_ms"}, from < to <= now.
struct BackfillRange {
  std::int64_t from_ms = 0;
  std::int64_t to_ms = 0;
};
Result<BackfillRange> ParseBackfill(const boost::json::value& body, std::int64_t now_ms);

// GET /v1/schedules?state=active|paused|ended&prefix=P&limit=N&after=ID
struct ScheduleListQuery {
  std::optional<ScheduleState> state;
  std::string prefix;
  std::size_t limit = 100;  // 1..1000
  std::string after;        // a previous page's next_after
  bool show_headers = false;
};
Result<ScheduleListQuery> ParseScheduleListQuery(std::string_view query);

// GET /v1/schedules/{id}?next=N&show_headers=B: the next N fire times
// (0..100, default 5).
struct ScheduleGetQuery {
  std::size_t next = 5;
  bool show_headers = false;
};
Result<ScheduleGetQuery> ParseScheduleGetQuery(std::string_view query);

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_API_SCHEDULE_REQUEST_H_
