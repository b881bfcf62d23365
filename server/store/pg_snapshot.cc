// SPDX-License-Identifier: Apache-2.0
#include "store/pg_snapshot.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "store/pg_rows.h"
#include "store/record_codec.h"

namespace tickwheel::server {

Result<std::unique_ptr<StoreSnapshot>> PgSnapshot::Take(const std::string& conninfo) {
  Result<std::unique_ptr<PgConnection>> c = PgConnection::Connect(conninfo);
  if (!c.ok()) return c.status();
  std::unique_ptr<PgSnapshot> out(new PgSnapshot(std::move(*c)));
  PgConnection& conn = *out->conn_;
  if (Status s = conn.ExecScript("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"); !s.ok()) {
    return s;
  }
  // The snapshot is taken by the transaction's first statement: this one.
  Result<PgResult> r =
      conn.Exec("SELECT counts.state, counts.n, (extract(epoch from now()) * 1000)::bigint FROM (" +
                std::string(kCountsQuery) + ") counts");
  if (!r.ok()) return r.status();
  for (int i = 0; i < r->rows(); ++i) {
    const std::int64_t state = r->Int(i, 0);
    if (state >= 0 && state < kNumStates) out->counts_[state] = r->Int(i, 1);
    out->taken_ms_ = r->Int(i, 2);
  }
  return std::unique_ptr<StoreSnapshot>(std::move(out));
}

PgSnapshot::~PgSnapshot() {
  if (conn_->healthy()) conn_->Rollback();
}

Result<StoreSnapshot::Page> PgSnapshot::Timers(const std::optional<std::string>& after,
                                               std::size_t limit, std::size_t max_bytes,
                                               unsigned states) {
  std::vector<std::int64_t> wanted;
  for (int i = 0; i < kNumStates; ++i) {
    if (states & (1u << i)) wanted.push_back(i);
  }
  // What is looked at (by id, the primary key): the page's rows when
  // every state is wanted, else the scan budget; records only of the
  // states asked for.
  const std::size_t scan =
      states == kAllStates ? std::min(limit, kPageScanBudget) : kPageScanBudget;
  Result<PgResult> r = conn_->Exec(
      "SELECT id, CASE WHEN state = ANY($3::smallint[]) THEN record END FROM "
      "tickwheel_timers WHERE id > $1 ORDER BY id LIMIT $2",
      {after.value_or(""), std::to_string(scan),
       PgBigintArray(wanted)});
  if (!r.ok()) return r.status();
  Page page;
  std::size_t bytes = 0;
  int i = 0;
  for (; i < r->rows() && page.records.size() < limit &&
         (bytes < max_bytes || page.records.empty());
       ++i) {
    std::string id(r->Text(i, 0));
    page.next = id;
    if (r->IsNull(i, 1)) continue;
    Result<TimerRecord> record = DecodeRecord(id, r->Bytes(i, 1));
    if (!record.ok()) return record.status();
    bytes += 256 + record->payload.size() + record->target.size();
    page.records.push_back(std::move(*record));
  }
  const bool more = static_cast<std::size_t>(r->rows()) == scan || i < r->rows();
  if (!more) page.next.reset();
  return page;
}

Result<StoreSnapshot::Rest> PgSnapshot::SchedulesAndFlows() {
  Rest rest;
  Result<PgResult> schedules =
      conn_->Exec("SELECT id, state, record, plan FROM tickwheel_schedules ORDER BY id");
  if (!schedules.ok()) return schedules.status();
  for (int i = 0; i < schedules->rows(); ++i) {
    Result<std::optional<ScheduleRow>> row = DecodeScheduleRow(
        std::string(schedules->Text(i, 0)), schedules->Int(i, 1), schedules->Bytes(i, 2),
        schedules->Bytes(i, 3));
    if (!row.ok()) return row.status();
    if (*row) rest.schedules.push_back(std::move(**row));
  }
  Result<PgResult> flows = conn_->Exec(
      "SELECT flow, settings FROM tickwheel_flows WHERE settings <> '' ORDER BY flow");
  if (!flows.ok()) return flows.status();
  for (int i = 0; i < flows->rows(); ++i) {
    rest.flows.emplace_back(std::string(flows->Text(i, 0)), std::string(flows->Text(i, 1)));
  }
  return rest;
}

}  // namespace tickwheel::server
