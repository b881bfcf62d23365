// SPDX-License-Identifier: Apache-2.0
// The JSON answers of /v1/schedules.
#ifndef TICKWHEEL_SERVER_API_SCHEDULE_JSON_H_
#define TICKWHEEL_SERVER_API_SCHEDULE_JSON_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "schedule/planner.h"
#include "schedule/schedule_record.h"
#include "schedule/schedule_service.h"
#include "timer/timer_record.h"

namespace tickwheel::server {

// What GET adds to a schedule: its next fire times, each in UTC and in its
// zone, and its last occurrences (newest first).
struct ScheduleDetails {
  std::vector<std::int64_t> upcoming;
  const Timeline* timeline = nullptr;  // to show the upcoming times in the zone
  std::vector<TimerRecord> last;
};

// A schedule: its fields, its planning and its counts; header values as
// "***" unless `show_header_values`; with `details` for GET.
std::string ScheduleJson(const ScheduleRecord& r, bool show_header_values,
                         const ScheduleDetails* details = nullptr);

// A list page: {"schedules": [...], "next_after": id?}.
std::string SchedulePageJson(const std::vector<ScheduleRecord>& schedules,
                             const std::optional<std::string>& next, bool show_header_values);

// :backfill's answer: {"created", "existing", "more", "next_from_ms"?}.
std::string BackfillJson(const BackfillOutcome& out);

// "2026-03-29T01:00:00Z" (".250" only when the milliseconds are not zero).
std::string UtcTime(std::int64_t ms);

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_API_SCHEDULE_JSON_H_
