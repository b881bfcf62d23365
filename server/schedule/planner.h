// SPDX-License-Identifier: Apache-2.0
// Planner: how a schedule's planning moves, as pure functions of its
// record, its recurrence and the time (no store, no clock), so every policy
// is tested on a manual clock. The schedule service (schedule_service.h)
// runs them inside store mutations and turns their steps into occurrence
// timers.
//
// The model (docs/schedules.md): a schedule keeps exactly one future
// occurrence planned as a pending timer (next_ms). The write that claims
// it for delivery plans the one after it, so the server's due index and
// scheduler do the timing and nothing ever scans the schedules. Every time
// of the recurrence up to planned_until_ms is decided (planned, fired or
// skipped) and never decided again; an occurrence's id is its dedup key,
// so a time whose occurrence exists (a trigger, a backfill) is not planned
// again.
//
// At the claim of the planned occurrence X, at `now`:
//   - X was missed if its time (with its jitter) is more than
//     kMissedGraceMs before the moment its shard's owner began firing
//     (`owned_since`: this process's start, a takeover; or the schedule's
//     resume), or more than catch_up_window_ms before now. An occurrence
//     that is only late (a busy server) is not missed: it fires.
//   - Missed times (X and those after it up to now that were missed too)
//     go to the catch-up policy: none skips them all, latest fires the
//     last of them, all fires each, oldest first, at most catch_up_max;
//     only times within catch_up_window_ms of now ever fire.
//   - Then the overlap policy: while the occurrence last fired is still
//     being delivered or retried, skip drops the new one and buffer_one
//     keeps one (its timer erased) until that one finishes.
//   - Then the next time after everything decided is planned (if it is
//     due already, it fires at once: it was not missed).
// Triggers and backfills are occurrences too, outside the plan: they fire
// whatever the overlap policy and state, and count neither toward
// max_occurrences nor the catch-up.
#ifndef TICKWHEEL_SERVER_SCHEDULE_PLANNER_H_
#define TICKWHEEL_SERVER_SCHEDULE_PLANNER_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "schedule/recurrence.h"
#include "schedule/schedule_record.h"

namespace tickwheel::server {

// A schedule's times: its recurrence within start_ms, end_ms and the range
// of occurrence ids (timer/occurrence_id.h).
//
// Thread safety: immutable; copies share the compiled recurrence.
class Timeline {
 public:
  // kInvalidArgument (naming the field) if the spec does not compile.
  static Result<Timeline> Of(const ScheduleRecord& record);

  struct Next {
    std::optional<std::int64_t> ms;  // the time, or none...
    EndReason why = EndReason::kNone;  // ...because of end_ms, or no more times
  };
  // The first time strictly after `t`.
  Next After(std::int64_t t) const;
  // The last time <= `t`. REQUIRES: `known` <= t is a time of the timeline.
  // O(log(t - known)) calls of NextAfter.
  std::int64_t LastAtOrBefore(std::int64_t known, std::int64_t t) const;
  // How many times lie strictly between a and b, counting at most `cap`.
  std::uint64_t CountBetween(std::int64_t a, std::int64_t b, std::uint64_t cap) const;
  // Local times in (a, b] that dst_gap "skip" dropped (0 unless a cron
  // schedule with that policy): times the "shift" policy would fire at.
  std::uint64_t DstSkipsBetween(std::int64_t a, std::int64_t b) const;

  const Recurrence& recurrence() const { return recurrence_; }

 private:
  Timeline(Recurrence r, std::optional<Recurrence> shifted, std::int64_t start, std::int64_t end)
      : recurrence_(std::move(r)), shifted_(std::move(shifted)), start_(start), end_(end) {}

  Recurrence recurrence_;
  std::optional<Recurrence> shifted_;  // the same with dst_gap "shift", to count skips
  std::int64_t start_;  // first allowed time
  std::int64_t end_;    // first time not allowed
  bool end_is_end_ms_ = false;  // end_ is the record's end_ms (not the id range's)
};

// How much after its time the occurrence `nominal_ms` of `schedule_id` is
// due: in [0, jitter_ms), the same every time it is asked (a hash).
std::int64_t JitterMs(std::string_view schedule_id, std::int64_t nominal_ms,
                      std::int64_t jitter_ms);

// An occurrence timer to create: its time (and id), and when it is due.
struct NewOccurrence {
  std::int64_t nominal_ms = 0;
  std::int64_t due_ms = 0;
  friend bool operator==(const NewOccurrence&, const NewOccurrence&) = default;
};

// What a planning step asks of the store and tells the metrics.
struct PlanStep {
  std::vector<NewOccurrence> create;  // in order of their due times
  std::uint64_t planned = 0;          // of them, new times of the recurrence
  std::uint64_t skipped_catch_up = 0;
  std::uint64_t skipped_overlap = 0;
  std::uint64_t skipped_dst = 0;
  std::uint64_t fired = 0;
};

// Whether the occurrence at a time already exists in the store (any state).
using OccurrenceExists = std::function<bool(std::int64_t nominal_ms)>;

// At most this many times are counted as skipped by one catch-up (the
// counts say "at least" beyond it); every_ms schedules are counted exactly.
inline constexpr std::uint64_t kMaxSkipCount = 1000;
// A time due this little before its owner began firing is not missed (a
// quick restart, a rolling hand-over).
inline constexpr std::int64_t kMissedGraceMs = 5000;

// Keeps the schedule's invariant: while active, its next time is planned
// (unless max_occurrences is reached), and it ends once nothing is left
// to plan or to fire. Idempotent.
void Maintain(ScheduleRecord& s, const Timeline& t, std::int64_t now,
              const OccurrenceExists& exists, PlanStep& step);

// A new schedule at `now`: its first time is after now (and at or after
// start_ms).
void StartPlanning(ScheduleRecord& s, const Timeline& t, std::int64_t now,
                   const OccurrenceExists& exists, PlanStep& step);

enum class Fate {
  kFire,         // deliver it
  kSkipCatchUp,  // missed, and the catch-up policy does not fire it
  kSkipOverlap,  // overlap "skip" (or "buffer_one" with one buffered already)
  kBuffer,       // overlap "buffer_one": erased, re-created when the running one finishes
};

// The occurrence at `nominal_ms` is claimed for its first attempt at
// `now` by a node that began firing its shard at `owned_since` (wall ms).
// `previous_running`: whether the occurrence last_fired_ms is still being
// delivered or retried (looked at only when NeedsPrevious(s)).
Fate OnClaim(ScheduleRecord& s, const Timeline& t, std::int64_t nominal_ms, std::int64_t now,
             std::int64_t owned_since, bool previous_running, const OccurrenceExists& exists,
             PlanStep& step);
// Whether OnClaim of an occurrence other than last_fired_ms looks at it.
inline bool NeedsPrevious(const ScheduleRecord& s) {
  return s.overlap != OverlapPolicy::kAllow && s.last_fired_ms.has_value();
}
// Whether OnFinished of that occurrence would change anything.
bool FinishMatters(const ScheduleRecord& s, std::int64_t nominal_ms, bool fired);

// The occurrence at `nominal_ms` will not be attempted again: delivered,
// failed, or cancelled (`fired`: it had been claimed). A buffered
// occurrence waiting for it is released (re-created, due now); one
// cancelled before it fired leaves the plan (the next time is planned).
void OnFinished(ScheduleRecord& s, const Timeline& t, std::int64_t nominal_ms, bool fired,
                std::int64_t now, const OccurrenceExists& exists, PlanStep& step);

// Pause: nothing of the recurrence is planned until Resume. Returns the
// times whose (pending, unclaimed) timers the caller erases: the planned
// one and the catch-ups (these are re-created at Resume).
std::vector<std::int64_t> Pause(ScheduleRecord& s, std::int64_t now);
// Resume: the catch-ups pending at the pause are re-created, a buffered
// occurrence is released unless `previous_running`, and planning goes on
// from the first time not decided: times that fell in the pause are
// missed ones, for the catch-up policy at their claim.
void Resume(ScheduleRecord& s, const Timeline& t, std::int64_t now, bool previous_running,
            const OccurrenceExists& exists, PlanStep& step);

// The times whose pending, unclaimed timers belong to the plan (next and
// catch-ups): what a delete or a change of the recurrence erases.
std::vector<std::int64_t> PlannedTimes(const ScheduleRecord& s);
// The times the schedule fires next as things stand at `now`: its planned
// occurrence, then what the recurrence has after it (for a paused one,
// what it would have after `now`), at most `n`, within its bounds and
// max_occurrences.
std::vector<std::int64_t> UpcomingTimes(const ScheduleRecord& s, const Timeline& t,
                                        std::int64_t now, std::size_t n);
// After a change of the recurrence, bounds or jitter (PATCH): the plan is
// dropped (the caller erased PlannedTimes) and made again from `now`: the
// first new time after now, or after the last time fired.
void Replan(ScheduleRecord& s, const Timeline& t, std::int64_t now,
            const OccurrenceExists& exists, PlanStep& step);

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_SCHEDULE_PLANNER_H_
