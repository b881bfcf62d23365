// SPDX-License-Identifier: Apache-2.0
// The schedule service: every operation on a schedule as the body of one
// store mutation, which writes the schedule and the occurrence timers its
// planning (planner.h) creates or erases in the same atomic write. The
// API's handlers run the operations (api/schedule_handlers.h); the
// dispatcher runs OccurrencePlanning in the writes that claim occurrences
// and record their outcomes, so the next occurrence is planned in the very
// write that claims the previous one.
//
// Locking: a mutation running one of these names ScheduleKey(id) among its
// ids (the dispatcher's also the occurrence it claims). Every write that
// creates, erases or replans a schedule's occurrences holds that key, so
// these reads of occurrences the mutation did not name (StoreTxn::Prefetch)
// are safe: nothing else creates or erases them meanwhile.
//
// A mutation may run more than once (a retried PostgreSQL transaction):
// these functions fill their outputs afresh each time.
#ifndef TICKWHEEL_SERVER_SCHEDULE_SCHEDULE_SERVICE_H_
#define TICKWHEEL_SERVER_SCHEDULE_SCHEDULE_SERVICE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "schedule/planner.h"
#include "schedule/schedule_record.h"
#include "store/timer_store.h"
#include "timer/timer_record.h"

namespace tickwheel::server {

// What planning did in one mutation, for the metrics (counted once the
// write is committed).
struct PlanTotals {
  std::uint64_t planned = 0;  // occurrence timers created by the recurrence
  std::uint64_t fired = 0;
  std::uint64_t skipped_overlap = 0;
  std::uint64_t skipped_catch_up = 0;
  std::uint64_t skipped_dst = 0;
  std::vector<std::int64_t> lag_ms;  // per planning claim: how late it was claimed
  void Add(const PlanStep& step);
};

// ---- The API's operations (in a mutation naming ScheduleKey(id)) ----

// Whether a schedule's fields fit together: its recurrence compiles (a
// 400 naming "cron", "time_zone", ...), end_ms is after start_ms, and an
// every_ms schedule's jitter_ms is below every_ms (so its occurrences keep
// their order).
Status CheckSchedule(const ScheduleRecord& r);

// POST /v1/schedules: `asked` is the validated request (id, spec, bounds,
// policies, what occurrences deliver, digest). A new schedule is planned
// from `now` (201); the same request again answers the stored one (200);
// another with the same id is kConflict "id_conflict".
struct CreateOutcome {
  int status = 0;  // 201 or 200
  ScheduleRecord record;
  PlanTotals totals;
};
Status CreateSchedule(StoreTxn& txn, const ScheduleRecord& asked, std::int64_t now,
                      CreateOutcome& out);

// PATCH: the fields given replace the schedule's. A change of the
// recurrence, its bounds (start_ms, end_ms, max_occurrences) or jitter_ms
// replans from now (the planned occurrence is replaced by the new
// recurrence's first time after now); any change applies to occurrences
// not yet claimed, which are rewritten. kInvalidArgument if the result does
// not compile.
struct SchedulePatch {
  // The recurrence: every_ms or cron replaces it (with the anchor_ms,
  // time_zone and dst policies given, the defaults otherwise); given alone,
  // anchor_ms, time_zone, dst_gap and dst_overlap change the current one.
  std::optional<std::int64_t> every_ms, anchor_ms;
  std::optional<std::string> cron, time_zone;
  std::optional<DstGap> dst_gap;
  std::optional<DstOverlap> dst_overlap;
  std::optional<std::optional<std::int64_t>> start_ms, end_ms;  // inner nullopt: remove
  std::optional<std::optional<std::uint32_t>> max_occurrences;
  std::optional<std::int64_t> jitter_ms;
  std::optional<OverlapPolicy> overlap;
  std::optional<CatchUpPolicy> catch_up;
  std::optional<std::int64_t> catch_up_window_ms;
  std::optional<std::uint32_t> catch_up_max;
  // What occurrences deliver (target and headers together).
  std::optional<std::string> target;
  std::optional<std::string> flow;  // a flow key; "": back to the target's
  std::optional<std::vector<std::pair<std::string, std::string>>> headers;
  std::optional<std::string> payload;
  std::optional<std::uint32_t> max_attempts, backoff_ms;
  bool empty() const;
};
struct ChangeOutcome {
  ScheduleRecord record;
  PlanTotals totals;
};
Status PatchSchedule(StoreTxn& txn, const std::string& id, const SchedulePatch& patch,
                     std::int64_t now, ChangeOutcome& out);

// :pause (active -> paused; paused: unchanged), :resume (paused -> active;
// active: unchanged). kConflict "schedule_ended" for an ended schedule.
Status PauseSchedule(StoreTxn& txn, const std::string& id, std::int64_t now, ChangeOutcome& out);
Status ResumeSchedule(StoreTxn& txn, const std::string& id, std::int64_t now,
                      ChangeOutcome& out);

// DELETE: the schedule and its planned, unclaimed occurrences are erased;
// occurrences being delivered finish; the others keep their records.
Status DeleteSchedule(StoreTxn& txn, const std::string& id, std::int64_t now,
                      ChangeOutcome& out);

// :trigger: one occurrence now, outside the recurrence (id
// "<schedule>@<now>"), in any state. `created` false: an occurrence at
// that millisecond exists already, and is the one answered.
struct TriggerOutcome {
  TimerRecord occurrence;
  bool created = false;
};
Status TriggerSchedule(StoreTxn& txn, const std::string& id, std::int64_t now,
                       TriggerOutcome& out);

// :backfill: an occurrence for each time of the recurrence in [from_ms,
// to_ms) (both <= now), except those that exist (in any state): each time
// fires once. At most kMaxBackfill are created per call, due now in time
// order; `more`/`next_from_ms` say where to go on.
inline constexpr std::size_t kMaxBackfill = 1000;
struct BackfillOutcome {
  std::size_t created = 0;
  std::size_t existing = 0;
  bool more = false;
  std::int64_t next_from_ms = 0;
};
Status BackfillSchedule(StoreTxn& txn, const std::string& id, std::int64_t from_ms,
                        std::int64_t to_ms, std::int64_t now, BackfillOutcome& out);

// ---- The dispatcher's (in the writes that claim occurrences and record
// their outcomes) ----

// The ids a claim or outcome write over `timer_ids` must also name: the
// ScheduleKey of each occurrence's schedule, once.
std::vector<std::string> WithScheduleKeys(std::vector<std::string> timer_ids);

// The planning of the occurrences one mutation claims or completes.
// Thread safety: one mutation's (one thread).
class OccurrencePlanning {
 public:
  OccurrencePlanning(StoreTxn& txn, std::int64_t now) : txn_(txn), now_(now) {}

  // Reads ahead what claiming these timers will read (their schedules'
  // planned next occurrences, the occurrences they may overlap with).
  void Prefetch(const std::vector<std::string>& timer_ids);

  enum class Claimed {
    kNotAnOccurrence,  // deliver as any timer
    kFire,             // deliver; the schedule was planned on
    kSkipped,          // written as cancelled ("skipped: ..."): do not deliver
    kBuffered,         // erased until the running occurrence finishes: do not deliver
  };
  // `before` (pending, no attempt yet) is claimed for its first attempt by
  // a node that began firing its shard at `owned_since` (wall ms): plans
  // its schedule. On kSkipped and kBuffered the timer is written here and
  // the caller must not Put its claim. An occurrence whose schedule is gone
  // is skipped ("the schedule was deleted").
  Result<Claimed> Claim(const TimerRecord& before, std::int64_t owned_since);

  // `after` (an occurrence) will not be attempted again (delivered, failed,
  // cancelled; `fired`: it had been claimed).
  Status Finished(const TimerRecord& after, bool fired);

  const PlanTotals& totals() const { return totals_; }

 private:
  struct Loaded {
    ScheduleRecord record;
    std::optional<Timeline> timeline;
    bool changed = false;
  };
  // The schedule `id` (read once per mutation), nullptr if there is none;
  // with its timeline compiled unless `with_timeline` is false.
  Result<Loaded*> Schedule(const std::string& id, bool with_timeline = true);
  Status Save(Loaded& s);

  StoreTxn& txn_;
  const std::int64_t now_;
  std::map<std::string, std::optional<Loaded>> schedules_;
  PlanTotals totals_;
};

// ---- Reading ----

// A schedule's record, decoded; nullopt if none.
Result<std::optional<ScheduleRecord>> ReadSchedule(const TimerStore& store, const std::string& id);

// A schedule's last occurrences (newest first), from the store.
Result<std::vector<TimerRecord>> LastOccurrences(const TimerStore& store, const std::string& id,
                                                 std::size_t n);

// Whether an occurrence timer is still being delivered or retried.
inline bool IsRunning(const TimerRecord& r) {
  return r.state == TimerState::kDelivering ||
         (r.state == TimerState::kPending && r.attempts > 0);
}

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_SCHEDULE_SCHEDULE_SERVICE_H_
