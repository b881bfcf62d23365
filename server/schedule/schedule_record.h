// SPDX-License-Identifier: Apache-2.0
// A recurring schedule as the stores keep it (as a ScheduleRow, encoded by
// EncodeSchedule): what it fires and when, its policies, and where its
// planning stands. How the fields change is in planner.h; the model for
// users is docs/schedules.md.
#ifndef TICKWHEEL_SERVER_SCHEDULE_SCHEDULE_RECORD_H_
#define TICKWHEEL_SERVER_SCHEDULE_SCHEDULE_RECORD_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "schedule/recurrence.h"
#include "store/timer_store.h"
#include "timer/timer_record.h"

namespace tickwheel::server {

// The numbers are stored (ScheduleRow::state): never reuse.
enum class ScheduleState : std::uint8_t {
  kActive = 0,  // occurrences are planned
  kPaused = 1,  // nothing is planned until :resume
  kEnded = 2,   // nothing more will be planned (end_ms, max_occurrences, no more times)
};
static_assert(kScheduleStates == 3);

// What the next occurrence does while the previous one is still being
// delivered or retried.
enum class OverlapPolicy : std::uint8_t { kAllow = 0, kSkip = 1, kBufferOne = 2 };
// Which occurrences missed while the server (or the shard's owner) was
// down, or the schedule paused, still fire.
enum class CatchUpPolicy : std::uint8_t { kNone = 0, kLatest = 1, kAll = 2 };
// Why a schedule ended.
enum class EndReason : std::uint8_t {
  kNone = 0, kEndTime = 1, kMaxOccurrences = 2, kNoMoreTimes = 3,
};

std::string_view StateName(ScheduleState);
std::optional<ScheduleState> ParseScheduleState(std::string_view);
std::string_view PolicyName(OverlapPolicy);
std::optional<OverlapPolicy> ParseOverlapPolicy(std::string_view);
std::string_view PolicyName(CatchUpPolicy);
std::optional<CatchUpPolicy> ParseCatchUpPolicy(std::string_view);
std::string_view EndReasonName(EndReason);

inline constexpr std::int64_t kDefaultCatchUpWindowMs = 3'600'000;  // latest, all
inline constexpr std::int64_t kDefaultNoneWindowMs = 60'000;         // none
inline constexpr std::uint32_t kDefaultCatchUpMax = 100;

// Counters of one schedule, shown by GET (the server-wide ones are metrics).
struct ScheduleCounters {
  std::uint64_t planned = 0;           // occurrences the recurrence put in the store
  std::uint64_t fired = 0;             // occurrences claimed for delivery (any kind)
  std::uint64_t skipped_overlap = 0;
  std::uint64_t skipped_catch_up = 0;  // at most kMaxSkipCount per catch-up
  std::uint64_t skipped_dst = 0;       // gap times under dst_gap "skip"
  std::uint64_t triggered = 0;         // :trigger
  std::uint64_t backfilled = 0;        // :backfill, occurrences created
  friend bool operator==(const ScheduleCounters&, const ScheduleCounters&) = default;
};

inline bool operator==(const RecurrenceSpec& a, const RecurrenceSpec& b) {
  return a.every_ms == b.every_ms && a.anchor_ms == b.anchor_ms && a.cron == b.cron &&
         a.time_zone == b.time_zone && a.dst_gap == b.dst_gap && a.dst_overlap == b.dst_overlap;
}

struct ScheduleRecord {
  std::string id;
  ScheduleState state = ScheduleState::kActive;
  RecurrenceSpec spec;
  std::optional<std::int64_t> start_ms;         // no occurrence before
  std::optional<std::int64_t> end_ms;           // none at or after
  std::optional<std::uint32_t> max_occurrences;  // of the recurrence that fire
  std::int64_t jitter_ms = 0;  // each occurrence due up to this much after its time
  OverlapPolicy overlap = OverlapPolicy::kAllow;
  CatchUpPolicy catch_up = CatchUpPolicy::kLatest;
  std::int64_t catch_up_window_ms = kDefaultCatchUpWindowMs;
  std::uint32_t catch_up_max = kDefaultCatchUpMax;

  // What every occurrence delivers, as a timer's fields.
  std::string target;  // timer/target.h
  // The flow its occurrences belong to (docs/flows.md) when the client
  // named one; empty: its target's (DefaultFlowKey).
  std::string flow;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string payload = "null";
  std::uint32_t max_attempts = 1;
  std::uint32_t backoff_ms = 0;
  // The W3C trace context of its create (timer/trace_context.h): each
  // occurrence carries it, so each attempt is a new span whose parent is
  // the span the schedule was created in. Fixed for the schedule's life.
  TraceContext trace;

  Digest digest{};  // SHA-256 of the create request's canonical JSON
  std::int64_t created_ms = 0;
  std::int64_t updated_ms = 0;

  // Planning (planner.h). Every time of the recurrence up to
  // planned_until_ms is decided: planned, fired, or skipped.
  std::int64_t planned_until_ms = 0;
  std::optional<std::int64_t> next_ms;      // the planned occurrence (a pending timer)
  std::vector<std::int64_t> catch_up_ms;    // catch-up occurrences created, not yet claimed
  std::optional<std::int64_t> buffered_ms;  // buffer_one: waits for last_fired_ms to finish
  std::optional<std::int64_t> last_fired_ms;  // the latest occurrence claimed
  std::uint32_t occurrences = 0;  // of the recurrence fired (toward max_occurrences)
  EndReason end_reason = EndReason::kNone;
  std::optional<std::int64_t> paused_ms;
  std::optional<std::int64_t> resumed_ms;  // the last :resume (what fell in the pause was missed)
  ScheduleCounters counts;

  friend bool operator==(const ScheduleRecord&, const ScheduleRecord&) = default;
};

// How the stores keep a schedule: format 4, its plan (where planning
// stands: what the claim of an occurrence changes) in ScheduleRow::plan,
// apart from the rest, so that a claim rewrites a hundred bytes rather than
// the whole schedule. DecodeSchedule reads format 4 and the whole formats
// before it (1 to 3, whose ScheduleRow::plan is empty). kCorrupt, saying
// what, for bytes that are not an encoded schedule (damage, or a newer
// format: then upgrade the server).
ScheduleRow EncodeSchedule(const ScheduleRecord& record);
Result<ScheduleRecord> DecodeSchedule(const ScheduleRow& row);

// The whole schedule in one string, as an export line carries it: format 3
// for a schedule with a trace context, format 2 for one without, which the
// versions before format 4 read too. DecodeWholeSchedule reads formats 1 to
// 3 (the state is in the bytes).
std::string EncodeWholeSchedule(const ScheduleRecord& record);
Result<ScheduleRecord> DecodeWholeSchedule(const std::string& id, const std::string& bytes);

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_SCHEDULE_SCHEDULE_RECORD_H_
