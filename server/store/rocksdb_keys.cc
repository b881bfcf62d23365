// SPDX-License-Identifier: Apache-2.0
#include "store/rocksdb_keys.h"

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <functional>
#include <memory>
#include <optional>

#include "store/record_codec.h"
#include "store/rocksdb_scan.h"

namespace tickwheel::server {
namespace {

const std::string kCountsKey = "mcount";
const std::string kScheduleCountsKey = "mschedules";
const std::string kFlowsMarkerKey = "mflows";

}  // namespace

std::string CountKey(int state) { return kCountsKey + std::to_string(state); }
std::string ScheduleCountKey(int state) { return kScheduleCountsKey + std::to_string(state); }

Result<ScheduleRow> DecodeScheduleValue(std::string_view id, std::string_view value,
                                        std::string plan) {
  if (value.empty() || static_cast<unsigned char>(value[0]) >= kScheduleStates) {
    return Status::Corrupt("the row of schedule \"" + std::string(id) +
                           "\" is damaged; it is left untouched");
  }
  return ScheduleRow{std::string(id), static_cast<std::uint8_t>(value[0]),
                     std::string(value.substr(1)), std::move(plan)};
}

Result<std::optional<ScheduleRow>> ReadScheduleRow(rocksdb::DB& db,
                                                   const rocksdb::ReadOptions& options,
                                                   std::string_view id) {
  const std::string keys[2] = {ScheduleRecordKey(id), SchedulePlanKey(id)};
  rocksdb::Slice slices[2] = {keys[0], keys[1]};
  rocksdb::PinnableSlice values[2];
  rocksdb::Status statuses[2];
  db.MultiGet(options, db.DefaultColumnFamily(), 2, slices, values, statuses);
  return ScheduleRowFrom(id, statuses[0], values[0].ToStringView(), statuses[1],
                         values[1].ToString());
}

Result<std::optional<ScheduleRow>> ScheduleRowFrom(std::string_view id,
                                                   const rocksdb::Status& row_status,
                                                   std::string_view row,
                                                   const rocksdb::Status& plan_status,
                                                   std::string plan) {
  if (row_status.IsNotFound()) return std::optional<ScheduleRow>();
  for (const rocksdb::Status* s : {&row_status, &plan_status}) {
    if (!s->ok() && !s->IsNotFound()) return ReadError(*s);
  }
  Result<ScheduleRow> decoded =
      DecodeScheduleValue(id, row, plan_status.ok() ? std::move(plan) : std::string());
  if (!decoded.ok()) return decoded.status();
  return std::optional<ScheduleRow>(std::move(*decoded));
}

Status ReadError(const rocksdb::Status& s) {
  return Status::Unavailable("store read failed: " + s.ToString());
}

void AddToBatch(const RecordChange& c, rocksdb::WriteBatch& batch) {
  const std::optional<TimerRecord>& b = c.before;
  const std::optional<TimerRecord>& a = c.after;
  if (b && IsScheduled(b->state) &&
      (!a || !IsScheduled(a->state) || b->due_ms != a->due_ms || b->flow != a->flow)) {
    batch.Delete(DueKey(b->due_ms, b->id));
  }
  if (b && !IsScheduled(b->state) &&
      (!a || a->state != b->state || a->updated_ms != b->updated_ms)) {
    batch.Delete(StateKey(b->state, b->updated_ms, b->id));
  }
  if (!a) {
    batch.Delete(RecordKey(b->id));
    return;
  }
  if (IsScheduled(a->state) &&
      (!b || !IsScheduled(b->state) || b->due_ms != a->due_ms || b->flow != a->flow)) {
    batch.Put(DueKey(a->due_ms, a->id), a->flow);
  }
  if (!IsScheduled(a->state) &&
      (!b || a->state != b->state || a->updated_ms != b->updated_ms)) {
    batch.Put(StateKey(a->state, a->updated_ms, a->id), "");
  }
  batch.Put(RecordKey(a->id), EncodeRecord(*a));
}

void AddToBatch(const ScheduleChange& c, rocksdb::WriteBatch& batch) {
  const std::optional<ScheduleRow>& b = c.before;
  const std::optional<ScheduleRow>& a = c.after;
  if (b && (!a || a->state != b->state)) batch.Delete(ScheduleStateKey(b->state, b->id));
  if (!a) {
    batch.Delete(ScheduleRecordKey(b->id));
    if (!b->plan.empty()) batch.Delete(SchedulePlanKey(b->id));
    return;
  }
  if (!b || a->state != b->state) batch.Put(ScheduleStateKey(a->state, a->id), "");
  // Most changes are a claim's: only the plan.
  if (!b || a->state != b->state || a->record != b->record) {
    batch.Put(ScheduleRecordKey(a->id), EncodeScheduleValue(*a));
  }
  if (a->plan.empty()) {
    if (b && !b->plan.empty()) batch.Delete(SchedulePlanKey(a->id));
  } else if (!b || a->plan != b->plan) {
    batch.Put(SchedulePlanKey(a->id), a->plan);
  }
}

namespace {

// The upgrades' walk: `rewrite` adds to a batch what each key starting with
// `prefix` (and its value) becomes; the batch is written every 20,000
// entries, and `last` (a marker, or nothing) with the final write, which is
// synced: until then a crash leaves the upgrade to be done again, never
// half-seen (each write is atomic, and the old keys go in the write that
// adds the new ones).
using Rewrite =
    std::function<void(const rocksdb::Slice& key, const rocksdb::Slice& value,
                       rocksdb::WriteBatch& batch)>;
Status RewritePrefix(rocksdb::DB& db, char prefix, const Rewrite& rewrite,
                     const std::function<void(rocksdb::WriteBatch&)>& last) {
  const std::string first(1, prefix);
  BoundedIterator it(db, PrefixEnd(first));
  rocksdb::WriteBatch batch;
  rocksdb::WriteOptions wo;
  for (it->Seek(first); it->Valid(); it->Next()) {
    rewrite(it->key(), it->value(), batch);
    if (batch.Count() >= 20'000) {
      if (rocksdb::Status s = db.Write(wo, &batch); !s.ok()) return ReadError(s);
      batch.Clear();
    }
  }
  if (!it->status().ok()) return ReadError(it->status());
  last(batch);
  if (batch.Count() == 0) return Status::Ok();
  wo.sync = true;
  if (rocksdb::Status s = db.Write(wo, &batch); !s.ok()) return ReadError(s);
  return Status::Ok();
}

}  // namespace

Status AddFlowsToDueIndex(rocksdb::DB& db) {
  std::string marker;
  if (db.Get(rocksdb::ReadOptions(), kFlowsMarkerKey, &marker).ok()) return Status::Ok();
  return RewritePrefix(
      db, kDuePrefix,
      [&db](const rocksdb::Slice& k, const rocksdb::Slice&, rocksdb::WriteBatch& batch) {
        const std::string id(k.data() + kDueIdOffset, k.size() - kDueIdOffset);
        std::string bytes;
        std::string flow = "invalid";  // a record it cannot read keeps its due entry
        if (db.Get(rocksdb::ReadOptions(), RecordKey(id), &bytes).ok()) {
          if (Result<TimerRecord> r = DecodeRecord(id, bytes); r.ok()) flow = r->flow;
        }
        batch.Put(k, flow);
      },
      [](rocksdb::WriteBatch& batch) { batch.Put(kFlowsMarkerKey, "1"); });
}

Status MovePlansToTheirPrefix(rocksdb::DB& db) {
  return RewritePrefix(
      db, kOldSchedulePlanPrefix,
      [](const rocksdb::Slice& k, const rocksdb::Slice& plan, rocksdb::WriteBatch& batch) {
        batch.Put(SchedulePlanKey(std::string_view(k.data() + 1, k.size() - 1)), plan);
        batch.Delete(k);
      },
      [](rocksdb::WriteBatch&) {});
}

}  // namespace tickwheel::server
