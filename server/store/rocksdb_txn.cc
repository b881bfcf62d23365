// SPDX-License-Identifier: Apache-2.0
#include "store/rocksdb_txn.h"

#include <rocksdb/db.h>

#include <utility>

#include "store/record_codec.h"
#include "store/rocksdb_keys.h"

namespace tickwheel::server {

void RocksDbTxn::Prefetch(const std::vector<std::string>& ids) {
  std::vector<std::string> keys;
  for (const std::string& id : ids) {
    if (IsScheduleKey(id)) {
      const std::string schedule = id.substr(0, id.size() - 1);
      if (fetched_schedules_.emplace(schedule, FetchedSchedule{}).second) {
        keys.push_back(ScheduleRecordKey(schedule));
        keys.push_back(SchedulePlanKey(schedule));
      }
    } else if (!Loaded(id) && fetched_.emplace(id, Fetched{}).second) {
      keys.push_back(RecordKey(id));
    }
  }
  if (keys.empty()) return;
  std::vector<rocksdb::Slice> slices(keys.begin(), keys.end());
  std::vector<rocksdb::PinnableSlice> values(keys.size());
  std::vector<rocksdb::Status> statuses(keys.size());
  db_.MultiGet(rocksdb::ReadOptions(), db_.DefaultColumnFamily(), keys.size(), slices.data(),
               values.data(), statuses.data());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const std::string id = keys[i].substr(1);
    switch (keys[i][0]) {
      case kScheduleRecordPrefix:
        fetched_schedules_[id].row = Fetched{statuses[i], values[i].ToString()};
        break;
      case kSchedulePlanPrefix:
        fetched_schedules_[id].plan = Fetched{statuses[i], values[i].ToString()};
        break;
      default:
        fetched_[id] = Fetched{statuses[i], values[i].ToString()};
    }
  }
}

Result<std::optional<TimerRecord>> RocksDbTxn::Load(const std::string& id) {
  Fetched f;
  if (auto it = fetched_.find(id); it != fetched_.end()) {
    f = std::move(it->second);
  } else {
    f.status = db_.Get(rocksdb::ReadOptions(), RecordKey(id), &f.bytes);
  }
  if (f.status.IsNotFound()) return std::optional<TimerRecord>();
  if (!f.status.ok()) return ReadError(f.status);
  Result<TimerRecord> r = DecodeRecord(id, f.bytes);
  if (!r.ok()) return r.status();
  return std::optional<TimerRecord>(std::move(*r));
}

Result<std::optional<ScheduleRow>> RocksDbTxn::LoadSchedule(const std::string& id) {
  auto it = fetched_schedules_.find(id);
  if (it == fetched_schedules_.end()) return ReadScheduleRow(db_, rocksdb::ReadOptions(), id);
  FetchedSchedule f = std::move(it->second);
  return ScheduleRowFrom(id, f.row.status, f.row.bytes, f.plan.status, std::move(f.plan.bytes));
}

}  // namespace tickwheel::server
