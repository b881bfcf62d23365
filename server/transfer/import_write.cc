// SPDX-License-Identifier: Apache-2.0
#include "transfer/import_write.h"

#include <algorithm>

#include "schedule/schedule_record.h"

namespace tickwheel::server {

bool SameTimer(const TimerRecord& stored, const TimerRecord& imported) {
  const bool same_body = stored.target == imported.target && stored.headers == imported.headers &&
                         stored.payload == imported.payload &&
                         stored.max_attempts == imported.max_attempts &&
                         stored.backoff_ms == imported.backoff_ms;
  if (stored.digest_kind == DigestKind::kSha256 && imported.digest_kind == DigestKind::kSha256) {
    // The same request, whenever it was made (a delay_ms makes another fire
    // time each time); and not a line edited under its old digest.
    return stored.digest == imported.digest && same_body;
  }
  return same_body && stored.fire_at_ms == imported.fire_at_ms;
}

bool SameSchedule(const ScheduleRow& stored, const ScheduleRow& imported) {
  Result<ScheduleRecord> a = DecodeSchedule(stored);
  Result<ScheduleRecord> b = DecodeSchedule(imported);
  return a.ok() && b.ok() && a->digest == b->digest;
}

std::vector<std::string> ImportBatch::ids() const {
  std::vector<std::string> out;
  out.reserve(records.size() + schedules.size());
  for (const TimerRecord& r : records) out.push_back(r.id);
  for (const ScheduleRow& s : schedules) out.push_back(ScheduleKey(s.id));
  return out;
}

std::size_t ImportBatch::count(ImportOutcome outcome) const {
  return static_cast<std::size_t>(std::count(outcomes.begin(), outcomes.end(), outcome) +
                                  std::count(schedule_outcomes.begin(), schedule_outcomes.end(),
                                             outcome));
}

TimerStore::Mutation ImportMutation(std::shared_ptr<ImportBatch> batch) {
  return [batch = std::move(batch)](StoreTxn& txn) -> Status {
    // A mutation may run more than once (the stores' retries): outputs
    // are set afresh.
    batch->outcomes.assign(batch->records.size(), ImportOutcome::kCreated);
    for (std::size_t i = 0; i < batch->records.size(); ++i) {
      const TimerRecord& record = batch->records[i];
      Result<std::optional<TimerRecord>> stored = txn.Get(record.id);
      if (!stored.ok() && stored.status().code() == StatusCode::kCorrupt) {
        batch->outcomes[i] = ImportOutcome::kConflict;  // a record this server cannot read
        continue;
      }
      if (!stored.ok()) return stored.status();
      if (*stored) {
        batch->outcomes[i] =
            SameTimer(**stored, record) ? ImportOutcome::kExisting : ImportOutcome::kConflict;
        continue;
      }
      txn.Put(std::nullopt, record);
    }
    batch->schedule_outcomes.assign(batch->schedules.size(), ImportOutcome::kCreated);
    for (std::size_t i = 0; i < batch->schedules.size(); ++i) {
      const ScheduleRow& row = batch->schedules[i];
      Result<std::optional<ScheduleRow>> stored = txn.GetSchedule(row.id);
      if (!stored.ok()) return stored.status();
      if (*stored) {
        batch->schedule_outcomes[i] =
            SameSchedule(**stored, row) ? ImportOutcome::kExisting : ImportOutcome::kConflict;
        continue;
      }
      txn.PutSchedule(std::nullopt, row);
    }
    return Status::Ok();
  };
}

}  // namespace tickwheel::server
