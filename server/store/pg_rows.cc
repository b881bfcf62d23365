// SPDX-License-Identifier: Apache-2.0
#include "store/pg_rows.h"

#include <utility>

#include "store/list_filter.h"
#include "store/record_codec.h"

namespace tickwheel::server {

Result<std::optional<TimerRecord>> DecodeRow(const std::string& id, const std::string& bytes) {
  Result<TimerRecord> r = DecodeRecord(id, bytes);
  if (!r.ok()) return r.status();
  return std::optional<TimerRecord>(std::move(*r));
}

Result<std::optional<ScheduleRow>> DecodeScheduleRow(const std::string& id, std::int64_t state,
                                                     std::string record, std::string plan) {
  if (state < 0 || state >= kScheduleStates) {
    return Status::Corrupt("the row of schedule \"" + id + "\" has state " +
                           std::to_string(state) + ", which this server does not know");
  }
  return std::optional<ScheduleRow>(
      ScheduleRow{id, static_cast<std::uint8_t>(state), std::move(record), std::move(plan)});
}

void Rows::Add(const TimerRecord& r, int shard) {
  ids.push_back(r.id);
  flows.push_back(r.flow);
  shards.push_back(shard);
  states.push_back(static_cast<std::int64_t>(r.state));
  due.push_back(r.due_ms);
  updated.push_back(r.updated_ms);
  records.push_back(EncodeRecord(r));
  if (hosts.empty() || r.target != last_target) {
    hosts.push_back(TargetHost(r.target));  // "" for NATS targets
    last_target = r.target;
  } else {
    hosts.push_back(hosts.back());
  }
}

PgParams Rows::Params() const {
  return {PgBinaryTextArray(ids),      PgBinaryIntArray(shards),
          PgBinarySmallintArray(states), PgBinaryBigintArray(due),
          PgBinaryBigintArray(updated),  PgBinaryTextArray(flows),
          PgBinaryByteaArray(records),   PgBinaryTextArray(hosts)};
}

std::string Rows::CopyData() const {
  PgCopyStream stream;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    stream.Row(8);
    stream.Bytes(ids[i]);
    stream.Integer(shards[i], 4);
    stream.Integer(states[i], 2);
    stream.Integer(due[i], 8);
    stream.Integer(updated[i], 8);
    stream.Bytes(flows[i]);
    stream.Bytes(records[i]);
    stream.Bytes(hosts[i]);
  }
  return stream.Finish();
}

void ScheduleRows::Add(const ScheduleRow& r, int shard) {
  ids.push_back(r.id);
  shards.push_back(shard);
  states.push_back(r.state);
  records.push_back(r.record);
  plans.push_back(r.plan);
}

PgParams ScheduleRows::Params() const {
  return {PgBinaryTextArray(ids), PgBinaryIntArray(shards), PgBinarySmallintArray(states),
          PgBinaryByteaArray(records), PgBinaryByteaArray(plans)};
}

}  // namespace tickwheel::server
