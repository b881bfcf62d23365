// SPDX-License-Identifier: Apache-2.0
// Imports (docs/operations.md, Export and import): timers restored as they
// were in another store — pending at their due time, dead letters with
// their attempts and last error, delivered and cancelled ones as finished
// records (swept by the retention from when they finished) — without
// overwriting any timer the store already has.
#ifndef TICKWHEEL_SERVER_TRANSFER_IMPORT_WRITE_H_
#define TICKWHEEL_SERVER_TRANSFER_IMPORT_WRITE_H_

#include <memory>
#include <string>
#include <vector>

#include "store/timer_store.h"
#include "timer/timer_record.h"

namespace tickwheel::server {

enum class ImportOutcome : std::uint8_t {
  kCreated,   // the id was free: the record is stored as it came
  kExisting,  // the store has this timer (same create): left as it is
  kConflict,  // the store has another timer with this id: left as it is
};

// The same timer: made by the same create request. The target, headers,
// payload and retry settings compare, and the digests when both records
// have one (DigestKind::kSha256), else the fire times.
bool SameTimer(const TimerRecord& stored, const TimerRecord& imported);

// One import request's records and, once written, what became of each.
// The same schedule: made by the same create request (their digests), so
// one may be further along its recurrence than the other.
bool SameSchedule(const ScheduleRow& stored, const ScheduleRow& imported);

struct ImportBatch {
  std::vector<TimerRecord> records;  // ids unique
  std::vector<ImportOutcome> outcomes;  // filled by the mutation, one per record
  std::vector<ScheduleRow> schedules;  // ids unique
  std::vector<ImportOutcome> schedule_outcomes;  // ... one per schedule
  std::vector<std::string> ids() const;
  std::size_t count(ImportOutcome outcome) const;
};

// The store mutation that imports `batch` (submit it over batch->ids(),
// durably): each id not in the store gets its record; an id in the store is
// kExisting or kConflict and is not written. Schedules alike (ids() names
// them by ScheduleKey). All of the batch or nothing.
// Idempotent: the same batch again changes nothing.
TimerStore::Mutation ImportMutation(std::shared_ptr<ImportBatch> batch);

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_TRANSFER_IMPORT_WRITE_H_
