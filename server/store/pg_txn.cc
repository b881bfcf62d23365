// SPDX-License-Identifier: Apache-2.0
#include "store/pg_txn.h"

#include "store/pg_rows.h"

namespace tickwheel::server {

Result<std::map<std::string, std::string>> LockTimers(PgConnection& c,
                                                      const std::vector<std::string>& ids) {
  std::map<std::string, std::string> rows;
  if (ids.empty()) return rows;
  Result<PgResult> r = c.ExecBinary(
      "SELECT id, record FROM tickwheel_timers WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE",
      {PgTextArray(ids)});
  if (!r.ok()) return r.status();
  for (int i = 0; i < r->rows(); ++i) rows.emplace(r->Text(i, 0), r->Text(i, 1));
  return rows;
}

void PgTxn::Prefetch(const std::vector<std::string>& ids) {
  std::vector<std::string> more;
  for (const std::string& id : ids) {
    if (!IsScheduleKey(id) && !Loaded(id) && named_.insert(id).second) more.push_back(id);
  }
  Fetch(more);
}

Result<std::optional<TimerRecord>> PgTxn::Load(const std::string& id) {
  if (!named_.count(id)) {
    named_.insert(id);
    Fetch({id});
    if (!failed_.ok()) return failed_;
  }
  auto it = rows_.find(id);
  if (it == rows_.end()) return std::optional<TimerRecord>();
  return DecodeRow(id, it->second);
}

Result<std::optional<ScheduleRow>> PgTxn::LoadSchedule(const std::string& id) {
  auto it = schedules_.find(id);
  if (it == schedules_.end()) return std::optional<ScheduleRow>();
  ScheduleColumns& s = it->second;
  return DecodeScheduleRow(id, s.state, std::move(s.record), std::move(s.plan));
}

void PgTxn::Fetch(const std::vector<std::string>& ids) {
  if (ids.empty() || !failed_.ok()) return;
  Result<std::map<std::string, std::string>> rows = LockTimers(c_, ids);
  if (!rows.ok()) {
    failed_ = rows.status();
    return;
  }
  rows_.merge(*rows);
}

Result<std::optional<TimerRecord>> InsertOnlyTxn::Load(const std::string& id) {
  read_.insert(id);
  return std::optional<TimerRecord>();
}

Result<std::optional<ScheduleRow>> InsertOnlyTxn::LoadSchedule(const std::string& id) {
  return Status::Corrupt("schedule \"" + id + "\" read on the insert-only path");
}

}  // namespace tickwheel::server
