// SPDX-License-Identifier: Apache-2.0
// The PostgreSQL store's transactions of a group: PgTxn, the general one,
// on the group's rows read and locked in an open transaction, and
// InsertOnlyTxn, the insert-only path's, on no rows at all
// (store/postgres_timer_store.h says when each is taken).
#ifndef TICKWHEEL_SERVER_STORE_PG_TXN_H_
#define TICKWHEEL_SERVER_STORE_PG_TXN_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "store/overlay_txn.h"
#include "store/pg_connection.h"
#include "store/pg_rows.h"

namespace tickwheel::server {

// Reads and locks (FOR UPDATE) the timers `ids`: id -> record bytes.
// REQUIRES: `c` is in an open transaction (the locks last until it ends).
Result<std::map<std::string, std::string>> LockTimers(PgConnection& c,
                                                      const std::vector<std::string>& ids);

// A group's transaction: the group's rows, read (and locked) at its start;
// timers the mutations read without naming them (a named schedule's
// occurrences) are read and locked when first asked for, or ahead
// (Prefetch). A read that fails fails the transaction (failed()).
// Thread safety: one thread (a store writer), for one group; it uses `c`,
// which must outlive it, in the transaction its caller opened.
class PgTxn final : public OverlayTxn {
 public:
  PgTxn(PgConnection& c, const std::vector<std::string>& named,
        std::map<std::string, std::string> rows,
        std::map<std::string, ScheduleColumns> schedules)
      : c_(c),
        named_(named.begin(), named.end()),
        rows_(std::move(rows)),
        schedules_(std::move(schedules)) {}

  void Prefetch(const std::vector<std::string>& ids) override;

  const Status& failed() const { return failed_; }

 protected:
  Result<std::optional<TimerRecord>> Load(const std::string& id) override;
  Result<std::optional<ScheduleRow>> LoadSchedule(const std::string& id) override;

 private:
  void Fetch(const std::vector<std::string>& ids);

  PgConnection& c_;
  std::set<std::string> named_;  // timers read (or being read) from the database
  std::map<std::string, std::string> rows_;
  std::map<std::string, ScheduleColumns> schedules_;
  Status failed_;
};

// The insert-only path's transaction: every id reads as absent, and the ids
// read are remembered, so the path can check that the INSERT covers them.
// Thread safety: one thread (a store writer), for one group.
class InsertOnlyTxn final : public OverlayTxn {
 public:
  const std::set<std::string>& read() const { return read_; }

 protected:
  Result<std::optional<TimerRecord>> Load(const std::string& id) override;
  // Never asked: groups naming schedules do not take this path.
  Result<std::optional<ScheduleRow>> LoadSchedule(const std::string& id) override;

 private:
  std::set<std::string> read_;
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_STORE_PG_TXN_H_
