// SPDX-License-Identifier: Apache-2.0
#include "store/overlay_txn.h"

namespace tickwheel::server {

const Result<std::optional<TimerRecord>>& OverlayTxn::Stored(const std::string& id) {
  return timers_.Stored(id, [this](const std::string& i) { return Load(i); });
}

const Result<std::optional<ScheduleRow>>& OverlayTxn::StoredSchedule(const std::string& id) {
  return schedules_.Stored(id, [this](const std::string& i) { return LoadSchedule(i); });
}

Result<std::optional<TimerRecord>> OverlayTxn::Get(const std::string& id) {
  if (const std::optional<TimerRecord>* w = timers_.Written(id)) return *w;
  return Stored(id);
}

Result<std::optional<ScheduleRow>> OverlayTxn::GetSchedule(const std::string& id) {
  if (const std::optional<ScheduleRow>* w = schedules_.Written(id)) return *w;
  return StoredSchedule(id);
}

bool OverlayTxn::Writable(const std::string& id) {
  // A record that could not be read is never overwritten.
  if (Stored(id).ok()) return true;
  violation_ = Status::Corrupt("timer \"" + id +
                               "\" has a record this server cannot read; it was not changed");
  return false;
}

bool OverlayTxn::WritableSchedule(const std::string& id) {
  if (StoredSchedule(id).ok()) return true;
  violation_ = Status::Corrupt("schedule \"" + id +
                               "\" could not be read from the store; it was not changed");
  return false;
}

void OverlayTxn::Put(const std::optional<TimerRecord>&, const TimerRecord& after) {
  if (Writable(after.id)) timers_.Set(after.id, after);
}

void OverlayTxn::Put(const std::optional<TimerRecord>&, TimerRecord&& after) {
  if (Writable(after.id)) {
    const std::string id = after.id;
    timers_.Set(id, std::move(after));
  }
}

void OverlayTxn::Erase(const TimerRecord& before) {
  if (Writable(before.id)) timers_.Set(before.id, std::nullopt);
}

void OverlayTxn::PutSchedule(const std::optional<ScheduleRow>&, const ScheduleRow& after) {
  if (WritableSchedule(after.id)) schedules_.Set(after.id, after);
}

void OverlayTxn::EraseSchedule(const ScheduleRow& before) {
  if (WritableSchedule(before.id)) schedules_.Set(before.id, std::nullopt);
}

void OverlayTxn::Begin() {
  timers_.Begin();
  schedules_.Begin();
  violation_ = Status::Ok();
}

Status OverlayTxn::End(Status status) {
  if (status.ok() && !violation_.ok()) status = violation_;
  if (status.ok()) return status;
  timers_.Undo();
  schedules_.Undo();
  return status;
}

StateCounts CountDelta(const std::vector<RecordChange>& changes) {
  StateCounts delta{};
  for (const RecordChange& c : changes) {
    if (c.before) --delta[static_cast<int>(c.before->state)];
    if (c.after) ++delta[static_cast<int>(c.after->state)];
  }
  return delta;
}

ScheduleCounts CountDelta(const std::vector<ScheduleChange>& changes) {
  ScheduleCounts delta{};
  for (const ScheduleChange& c : changes) {
    if (c.before && c.before->state < kScheduleStates) --delta[c.before->state];
    if (c.after && c.after->state < kScheduleStates) ++delta[c.after->state];
  }
  return delta;
}

std::vector<DueChange> DueChanges(const std::vector<RecordChange>& changes) {
  std::vector<DueChange> out;
  for (const RecordChange& c : changes) {
    const bool was = c.before && IsScheduled(c.before->state);
    const bool is = c.after && IsScheduled(c.after->state);
    if (is && (!was || c.before->due_ms != c.after->due_ms)) {
      out.push_back({c.after->id, c.after->due_ms, c.after->flow});
    } else if (was && !is) {
      out.push_back({c.before->id, std::nullopt, c.before->flow});
    }
  }
  return out;
}

}  // namespace tickwheel::server
