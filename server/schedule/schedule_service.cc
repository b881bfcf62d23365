// SPDX-License-Identifier: Apache-2.0
#include "schedule/schedule_service.h"

#include <algorithm>
#include <set>

#include "timer/flow_key.h"
#include "timer/occurrence_id.h"
#include "timer/timer_state_machine.h"

namespace tickwheel::server {
namespace {

Status NoSchedule(const std::string& id) {
  return Status::NotFound("no schedule with id \"" + id + "\"", "id");
}

Result<std::optional<ScheduleRecord>> Load(StoreTxn& txn, const std::string& id) {
  Result<std::optional<ScheduleRow>> row = txn.GetSchedule(id);
  if (!row.ok()) return row.status();
  if (!*row) return std::optional<ScheduleRecord>();
  Result<ScheduleRecord> r = DecodeSchedule(**row);
  if (!r.ok()) return r.status();
  return std::optional<ScheduleRecord>(std::move(*r));
}

// The schedule `id`, which must exist.
Result<ScheduleRecord> LoadExisting(StoreTxn& txn, const std::string& id) {
  Result<std::optional<ScheduleRecord>> r = Load(txn, id);
  if (!r.ok()) return r.status();
  if (!*r) return NoSchedule(id);
  return std::move(**r);
}

void Save(StoreTxn& txn, const std::optional<ScheduleRecord>& before, const ScheduleRecord& after) {
  txn.PutSchedule(before ? std::optional<ScheduleRow>(EncodeSchedule(*before)) : std::nullopt,
                  EncodeSchedule(after));
}

// Whether the occurrence of `s` at `t` exists (in any state). One that
// cannot be read counts as existing: it is never overwritten.
OccurrenceExists ExistsIn(StoreTxn& txn, const std::string& schedule_id) {
  return [&txn, schedule_id](std::int64_t t) {
    Result<std::optional<TimerRecord>> r = txn.Get(OccurrenceId(schedule_id, t));
    return !r.ok() || r->has_value();
  };
}

bool PreviousRunning(StoreTxn& txn, const ScheduleRecord& s) {
  if (!s.last_fired_ms) return false;
  Result<std::optional<TimerRecord>> r = txn.Get(OccurrenceId(s.id, *s.last_fired_ms));
  return r.ok() && *r && IsRunning(**r);
}

TimerRecord OccurrenceTimer(const ScheduleRecord& s, const NewOccurrence& o, std::int64_t now) {
  TimerRecord r;
  r.id = OccurrenceId(s.id, o.nominal_ms);
  r.state = TimerState::kPending;
  r.fire_at_ms = o.due_ms;
  r.due_ms = o.due_ms;
  r.max_attempts = s.max_attempts;
  r.backoff_ms = s.backoff_ms;
  r.created_ms = now;
  r.updated_ms = now;
  r.target = s.target;
  r.flow = s.flow.empty() ? DefaultFlowKey(s.target) : s.flow;
  r.headers = s.headers;
  r.payload = s.payload;
  r.trace = s.trace;
  return r;
}

// Creates the occurrence timers a planning step asks for (those that exist
// are left as they are).
void Apply(StoreTxn& txn, const ScheduleRecord& s, const PlanStep& step,
                    std::int64_t now) {
  for (const NewOccurrence& o : step.create) {
    TimerRecord timer = OccurrenceTimer(s, o, now);
    Result<std::optional<TimerRecord>> existing = txn.Get(timer.id);
    if (!existing.ok() || *existing) continue;
    txn.Put(std::nullopt, std::move(timer));
  }
}

// Whether an occurrence timer is one the plan made and nothing claimed yet.
bool Unclaimed(const TimerRecord& r) { return r.state == TimerState::kPending && r.attempts == 0; }

// Erases the unclaimed occurrence timers of `s` at `times`.
void EraseUnclaimed(StoreTxn& txn, const std::string& schedule_id,
                    const std::vector<std::int64_t>& times) {
  std::vector<std::string> ids;
  for (std::int64_t t : times) ids.push_back(OccurrenceId(schedule_id, t));
  txn.Prefetch(ids);
  for (const std::string& id : ids) {
    Result<std::optional<TimerRecord>> r = txn.Get(id);
    if (r.ok() && *r && Unclaimed(**r)) txn.Erase(**r);
  }
}

// Rewrites the unclaimed occurrence timers of `s` at `times` with what `s`
// delivers now.
void RewriteUnclaimed(StoreTxn& txn, const ScheduleRecord& s,
                      const std::vector<std::int64_t>& times, std::int64_t now) {
  for (std::int64_t t : times) {
    Result<std::optional<TimerRecord>> r = txn.Get(OccurrenceId(s.id, t));
    if (!r.ok() || !*r || !Unclaimed(**r)) continue;
    TimerRecord next = **r;
    next.target = s.target;
    next.flow = s.flow.empty() ? DefaultFlowKey(s.target) : s.flow;
    next.headers = s.headers;
    next.payload = s.payload;
    next.max_attempts = s.max_attempts;
    next.backoff_ms = s.backoff_ms;
    next.updated_ms = now;
    txn.Put(*r, next);
  }
}

Result<Timeline> TimelineOf(const ScheduleRecord& s) {
  Result<Timeline> t = Timeline::Of(s);
  if (!t.ok() && t.status().code() != StatusCode::kInvalidArgument) return t.status();
  if (!t.ok()) {
    return Status::Corrupt("schedule \"" + s.id + "\" has a recurrence this server cannot use (" +
                           t.status().message() + ")");
  }
  return t;
}

Status Ended(const ScheduleRecord& s) {
  return Status::Conflict("schedule_ended",
                          "schedule \"" + s.id + "\" has ended (" +
                              std::string(EndReasonName(s.end_reason)) +
                              "); PATCH it (e.g. a later end_ms) to make it active again",
                          "id");
}

}  // namespace

Status CheckSchedule(const ScheduleRecord& r) {
  if (Result<Timeline> t = Timeline::Of(r); !t.ok()) return t.status();
  if (r.start_ms && r.end_ms && *r.end_ms <= *r.start_ms) {
    return Status::Invalid("invalid_value", "end_ms must be after start_ms", "end_ms");
  }
  if (r.spec.every_ms && r.jitter_ms >= *r.spec.every_ms) {
    return Status::Invalid("out_of_range",
                           "jitter_ms must be below every_ms (" +
                               std::to_string(*r.spec.every_ms) +
                               "), so occurrences keep their order",
                           "jitter_ms");
  }
  return Status::Ok();
}

void PlanTotals::Add(const PlanStep& step) {
  planned += step.planned;
  fired += step.fired;
  skipped_overlap += step.skipped_overlap;
  skipped_catch_up += step.skipped_catch_up;
  skipped_dst += step.skipped_dst;
}

bool SchedulePatch::empty() const {
  return !every_ms && !anchor_ms && !cron && !time_zone && !dst_gap && !dst_overlap && !start_ms && !end_ms && !max_occurrences && !jitter_ms && !overlap &&
         !catch_up && !catch_up_window_ms && !catch_up_max && !target && !flow && !headers && !payload &&
         !max_attempts && !backoff_ms;
}

Status CreateSchedule(StoreTxn& txn, const ScheduleRecord& asked, std::int64_t now,
                      CreateOutcome& out) {
  out = CreateOutcome{};
  Result<std::optional<ScheduleRecord>> existing = Load(txn, asked.id);
  if (!existing.ok()) return existing.status();
  if (*existing) {
    if ((*existing)->digest != asked.digest) {
      return Status::Conflict("id_conflict",
                              "a schedule with id \"" + asked.id +
                                  "\" already exists with a different body",
                              "id");
    }
    out.status = 200;
    out.record = std::move(**existing);
    return Status::Ok();
  }
  Result<Timeline> t = Timeline::Of(asked);
  if (!t.ok()) return t.status();
  ScheduleRecord r = asked;
  r.state = ScheduleState::kActive;
  r.created_ms = now;
  r.updated_ms = now;
  PlanStep step;
  StartPlanning(r, *t, now, ExistsIn(txn, r.id), step);
  Apply(txn, r, step, now);
  out.totals.Add(step);
  Save(txn, std::nullopt, r);
  out.status = 201;
  out.record = std::move(r);
  return Status::Ok();
}

Status PatchSchedule(StoreTxn& txn, const std::string& id, const SchedulePatch& patch,
                     std::int64_t now, ChangeOutcome& out) {
  out = ChangeOutcome{};
  Result<ScheduleRecord> before = LoadExisting(txn, id);
  if (!before.ok()) return before.status();
  ScheduleRecord r = *before;
  if (patch.every_ms || patch.cron) {
    r.spec = RecurrenceSpec{};
    r.spec.every_ms = patch.every_ms;
    r.spec.cron = patch.cron.value_or("");
  }
  if (patch.anchor_ms) r.spec.anchor_ms = *patch.anchor_ms;
  if (patch.time_zone) r.spec.time_zone = *patch.time_zone;
  if (patch.dst_gap) r.spec.dst_gap = *patch.dst_gap;
  if (patch.dst_overlap) r.spec.dst_overlap = *patch.dst_overlap;
  if (patch.start_ms) r.start_ms = *patch.start_ms;
  if (patch.end_ms) r.end_ms = *patch.end_ms;
  if (patch.max_occurrences) r.max_occurrences = *patch.max_occurrences;
  if (patch.jitter_ms) r.jitter_ms = *patch.jitter_ms;
  if (patch.overlap) r.overlap = *patch.overlap;
  if (patch.catch_up) {
    r.catch_up = *patch.catch_up;
    if (!patch.catch_up_window_ms) {
      r.catch_up_window_ms =
          r.catch_up == CatchUpPolicy::kNone ? kDefaultNoneWindowMs : kDefaultCatchUpWindowMs;
    }
  }
  if (patch.catch_up_window_ms) r.catch_up_window_ms = *patch.catch_up_window_ms;
  if (patch.catch_up_max) r.catch_up_max = *patch.catch_up_max;
  if (patch.target) r.target = *patch.target;
  if (patch.flow) r.flow = *patch.flow;
  if (patch.headers) r.headers = *patch.headers;
  if (patch.payload) r.payload = *patch.payload;
  if (patch.max_attempts) r.max_attempts = *patch.max_attempts;
  if (patch.backoff_ms) r.backoff_ms = *patch.backoff_ms;
  if (Status valid = CheckSchedule(r); !valid.ok()) return valid;
  Result<Timeline> t = Timeline::Of(r);
  if (!t.ok()) return t.status();
  const bool replan = r.spec.every_ms != before->spec.every_ms ||
                      r.spec.anchor_ms != before->spec.anchor_ms ||
                      r.spec.cron != before->spec.cron ||
                      r.spec.time_zone != before->spec.time_zone ||
                      r.spec.dst_gap != before->spec.dst_gap ||
                      r.spec.dst_overlap != before->spec.dst_overlap ||
                      r.start_ms != before->start_ms || r.end_ms != before->end_ms ||
                      r.max_occurrences != before->max_occurrences ||
                      r.jitter_ms != before->jitter_ms;
  r.updated_ms = now;
  if (replan) {
    EraseUnclaimed(txn, id, PlannedTimes(*before));
    PlanStep step;
    Replan(r, *t, now, ExistsIn(txn, id), step);
    Apply(txn, r, step, now);
    out.totals.Add(step);
  } else {
    RewriteUnclaimed(txn, r, PlannedTimes(r), now);
  }
  Save(txn, *before, r);
  out.record = std::move(r);
  return Status::Ok();
}

Status PauseSchedule(StoreTxn& txn, const std::string& id, std::int64_t now, ChangeOutcome& out) {
  out = ChangeOutcome{};
  Result<ScheduleRecord> before = LoadExisting(txn, id);
  if (!before.ok()) return before.status();
  if (before->state == ScheduleState::kEnded) return Ended(*before);
  ScheduleRecord r = *before;
  if (r.state == ScheduleState::kActive) {
    EraseUnclaimed(txn, id, Pause(r, now));
    r.updated_ms = now;
    Save(txn, *before, r);
  }
  out.record = std::move(r);
  return Status::Ok();
}

Status ResumeSchedule(StoreTxn& txn, const std::string& id, std::int64_t now,
                      ChangeOutcome& out) {
  out = ChangeOutcome{};
  Result<ScheduleRecord> before = LoadExisting(txn, id);
  if (!before.ok()) return before.status();
  if (before->state == ScheduleState::kEnded) return Ended(*before);
  ScheduleRecord r = *before;
  if (r.state == ScheduleState::kPaused) {
    Result<Timeline> t = TimelineOf(r);
    if (!t.ok()) return t.status();
    PlanStep step;
    Resume(r, *t, now, r.buffered_ms && PreviousRunning(txn, r), ExistsIn(txn, id), step);
    Apply(txn, r, step, now);
    out.totals.Add(step);
    r.updated_ms = now;
    Save(txn, *before, r);
  }
  out.record = std::move(r);
  return Status::Ok();
}

Status DeleteSchedule(StoreTxn& txn, const std::string& id, std::int64_t now,
                      ChangeOutcome& out) {
  (void)now;
  out = ChangeOutcome{};
  Result<ScheduleRecord> before = LoadExisting(txn, id);
  if (!before.ok()) return before.status();
  EraseUnclaimed(txn, id, PlannedTimes(*before));
  txn.EraseSchedule(EncodeSchedule(*before));
  out.record = std::move(*before);
  return Status::Ok();
}

Status TriggerSchedule(StoreTxn& txn, const std::string& id, std::int64_t now,
                       TriggerOutcome& out) {
  out = TriggerOutcome{};
  Result<ScheduleRecord> before = LoadExisting(txn, id);
  if (!before.ok()) return before.status();
  const std::string occurrence = OccurrenceId(id, now);
  Result<std::optional<TimerRecord>> existing = txn.Get(occurrence);
  if (!existing.ok()) return existing.status();
  if (*existing) {
    out.occurrence = std::move(**existing);
    return Status::Ok();
  }
  ScheduleRecord r = *before;
  out.occurrence = OccurrenceTimer(r, {now, now}, now);
  txn.Put(std::nullopt, out.occurrence);
  out.created = true;
  r.counts.triggered += 1;
  Save(txn, *before, r);
  return Status::Ok();
}

Status BackfillSchedule(StoreTxn& txn, const std::string& id, std::int64_t from_ms,
                        std::int64_t to_ms, std::int64_t now, BackfillOutcome& out) {
  out = BackfillOutcome{};
  Result<ScheduleRecord> before = LoadExisting(txn, id);
  if (!before.ok()) return before.status();
  Result<Timeline> t = TimelineOf(*before);
  if (!t.ok()) return t.status();
  // The recurrence's times in the range, whatever the schedule's bounds.
  const Recurrence& recurrence = t->recurrence();
  std::vector<std::int64_t> times;
  std::optional<std::int64_t> at = recurrence.NextAfter(std::max(from_ms, kMinOccurrenceMs) - 1);
  for (; at && *at < to_ms && times.size() < kMaxBackfill; at = recurrence.NextAfter(*at)) {
    times.push_back(*at);
  }
  if (at && *at < to_ms) {
    out.more = true;
    out.next_from_ms = *at;
  }
  std::vector<std::string> ids;
  for (std::int64_t time : times) ids.push_back(OccurrenceId(id, time));
  txn.Prefetch(ids);
  ScheduleRecord r = *before;
  std::int64_t due = now;
  for (std::size_t i = 0; i < times.size(); ++i) {
    Result<std::optional<TimerRecord>> existing = txn.Get(ids[i]);
    if (!existing.ok()) return existing.status();
    if (*existing) {
      ++out.existing;
      continue;
    }
    txn.Put(std::nullopt, OccurrenceTimer(r, {times[i], due++}, now));  // in time order
    ++out.created;
  }
  if (out.created > 0) {
    r.counts.backfilled += out.created;
    Save(txn, *before, r);
  }
  return Status::Ok();
}

std::vector<std::string> WithScheduleKeys(std::vector<std::string> timer_ids) {
  std::set<std::string> keys;
  for (const std::string& id : timer_ids) {
    if (std::optional<OccurrenceName> name = ParseOccurrenceId(id)) {
      keys.insert(ScheduleKey(name->schedule_id));
    }
  }
  timer_ids.insert(timer_ids.end(), keys.begin(), keys.end());
  return timer_ids;
}

Result<OccurrencePlanning::Loaded*> OccurrencePlanning::Schedule(const std::string& id,
                                                                 bool with_timeline) {
  auto it = schedules_.find(id);
  if (it == schedules_.end()) {
    Result<std::optional<ScheduleRecord>> r = Load(txn_, id);
    if (!r.ok()) return r.status();
    std::optional<Loaded> loaded;
    if (*r) loaded = Loaded{std::move(**r), std::nullopt, false};
    it = schedules_.emplace(id, std::move(loaded)).first;
  }
  if (!it->second) return static_cast<Loaded*>(nullptr);
  Loaded& s = *it->second;
  if (with_timeline && !s.timeline) {
    Result<Timeline> t = TimelineOf(s.record);
    if (!t.ok()) return t.status();
    s.timeline = std::move(*t);
  }
  return &s;
}

Status OccurrencePlanning::Save(Loaded& s) {
  Result<std::optional<ScheduleRow>> stored = txn_.GetSchedule(s.record.id);
  if (!stored.ok()) return stored.status();
  s.record.updated_ms = now_;
  txn_.PutSchedule(*stored, EncodeSchedule(s.record));
  return Status::Ok();
}

void OccurrencePlanning::Prefetch(const std::vector<std::string>& timer_ids) {
  std::vector<std::string> ahead;
  for (const std::string& id : timer_ids) {
    std::optional<OccurrenceName> name = ParseOccurrenceId(id);
    if (!name) continue;
    Result<Loaded*> s = Schedule(std::string(name->schedule_id));
    if (!s.ok() || *s == nullptr) continue;
    const ScheduleRecord& r = (*s)->record;
    if (r.next_ms == name->nominal_ms) {
      if (std::optional<std::int64_t> after = (*s)->timeline->After(name->nominal_ms).ms) {
        ahead.push_back(OccurrenceId(r.id, *after));
      }
    }
    if (NeedsPrevious(r)) ahead.push_back(OccurrenceId(r.id, *r.last_fired_ms));
  }
  txn_.Prefetch(ahead);
}

Result<OccurrencePlanning::Claimed> OccurrencePlanning::Claim(const TimerRecord& before,
                                                             std::int64_t owned_since) {
  std::optional<OccurrenceName> name = ParseOccurrenceId(before.id);
  if (!name) return Claimed::kNotAnOccurrence;
  Result<Loaded*> loaded = Schedule(std::string(name->schedule_id));
  if (!loaded.ok()) {
    // A schedule this server cannot read or use: the occurrence is
    // delivered as any timer, and the schedule is left as it is.
    if (loaded.status().code() == StatusCode::kCorrupt) return Claimed::kNotAnOccurrence;
    return loaded.status();
  }
  if (*loaded == nullptr) {  // deleted since it was planned
    Result<std::optional<TimerRecord>> cancelled = Cancel(before, now_);
    if (!cancelled.ok() || !*cancelled) return Claimed::kSkipped;
    TimerRecord skipped = std::move(**cancelled);
    skipped.last_error = "skipped: the schedule was deleted";
    txn_.Put(before, skipped);
    return Claimed::kSkipped;
  }
  Loaded& s = **loaded;
  ScheduleRecord& r = s.record;
  const std::int64_t t = name->nominal_ms;
  const bool planned = r.next_ms == t;
  const bool previous = NeedsPrevious(r) && *r.last_fired_ms != t && PreviousRunning(txn_, r);
  PlanStep step;
  const Fate fate =
      OnClaim(r, *s.timeline, t, now_, owned_since, previous, ExistsIn(txn_, r.id), step);
  Apply(txn_, r, step, now_);
  totals_.Add(step);
  if (planned) totals_.lag_ms.push_back(now_ - (t + JitterMs(r.id, t, r.jitter_ms)));
  if (Status saved = Save(s); !saved.ok()) return saved;
  if (fate == Fate::kFire) return Claimed::kFire;
  if (fate == Fate::kBuffer) {
    txn_.Erase(before);
    return Claimed::kBuffered;
  }
  Result<std::optional<TimerRecord>> cancelled = Cancel(before, now_);
  if (!cancelled.ok() || !*cancelled) return Claimed::kSkipped;
  TimerRecord skipped = std::move(**cancelled);
  skipped.last_error =
      fate == Fate::kSkipOverlap
          ? "skipped: occurrence " + OccurrenceId(r.id, r.last_fired_ms.value_or(0)) +
                " was still running (overlap \"" + std::string(PolicyName(r.overlap)) + "\")"
          : "skipped: its time was missed (the server or its shard's owner was down, or the "
            "schedule paused, or more than catch_up_window_ms ago; catch_up \"" +
                std::string(PolicyName(r.catch_up)) + "\")";
  txn_.Put(before, skipped);
  return Claimed::kSkipped;
}

Status OccurrencePlanning::Finished(const TimerRecord& after, bool fired) {
  std::optional<OccurrenceName> name = ParseOccurrenceId(after.id);
  if (!name) return Status::Ok();
  const std::string schedule_id(name->schedule_id);
  // Most finished occurrences change nothing: their recurrence is compiled
  // only for those that do.
  Result<Loaded*> loaded = Schedule(schedule_id, /*with_timeline=*/false);
  if (loaded.ok() && *loaded != nullptr &&
      !FinishMatters((*loaded)->record, name->nominal_ms, fired)) {
    return Status::Ok();
  }
  if (loaded.ok()) loaded = Schedule(schedule_id);
  if (!loaded.ok()) {
    return loaded.status().code() == StatusCode::kCorrupt ? Status::Ok() : loaded.status();
  }
  if (*loaded == nullptr) return Status::Ok();
  Loaded& s = **loaded;
  PlanStep step;
  OnFinished(s.record, *s.timeline, name->nominal_ms, fired, now_, ExistsIn(txn_, s.record.id),
             step);
  Apply(txn_, s.record, step, now_);
  totals_.Add(step);
  return Save(s);
}

Result<std::optional<ScheduleRecord>> ReadSchedule(const TimerStore& store,
                                                   const std::string& id) {
  Result<std::optional<ScheduleRow>> row = store.GetSchedule(id);
  if (!row.ok()) return row.status();
  if (!*row) return std::optional<ScheduleRecord>();
  Result<ScheduleRecord> r = DecodeSchedule(**row);
  if (!r.ok()) return r.status();
  return std::optional<ScheduleRecord>(std::move(*r));
}

Result<std::vector<TimerRecord>> LastOccurrences(const TimerStore& store, const std::string& id,
                                                 std::size_t n) {
  return store.LastWithPrefix(ScheduleKey(id), "", n);
}

}  // namespace tickwheel::server
