// SPDX-License-Identifier: Apache-2.0
// PgSnapshot: the PostgreSQL store's StoreSnapshot (an export's view).
#ifndef TICKWHEEL_SERVER_STORE_PG_SNAPSHOT_H_
#define TICKWHEEL_SERVER_STORE_PG_SNAPSHOT_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "common/status.h"
#include "store/pg_connection.h"
#include "store/timer_store.h"

namespace tickwheel::server {

// An export's view of the cluster's store: one connection of its own in a
// REPEATABLE READ READ ONLY transaction, opened when the snapshot is taken
// and read page by page (a keyset over the primary key, in id order) until
// it is destroyed. Every page sees the database as of the transaction's
// first statement. While it is open, PostgreSQL keeps the row versions it
// may read (VACUUM waits), so exports expire when left idle.
// Thread safety: one caller at a time (StoreSnapshot); it shares nothing
// with the store, whose pool its connection is not taken from.
class PgSnapshot final : public StoreSnapshot {
 public:
  static Result<std::unique_ptr<StoreSnapshot>> Take(const std::string& conninfo);
  ~PgSnapshot() override;

  Result<Page> Timers(const std::optional<std::string>& after, std::size_t limit,
                      std::size_t max_bytes, unsigned states) override;
  Result<Rest> SchedulesAndFlows() override;

 private:
  explicit PgSnapshot(std::unique_ptr<PgConnection> conn) : conn_(std::move(conn)) {}
  std::unique_ptr<PgConnection> conn_;
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_STORE_PG_SNAPSHOT_H_
