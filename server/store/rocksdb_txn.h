// SPDX-License-Identifier: Apache-2.0
// RocksDbTxn: the embedded store's transaction of a group, reading the
// stored rows its mutations see.
#ifndef TICKWHEEL_SERVER_STORE_ROCKSDB_TXN_H_
#define TICKWHEEL_SERVER_STORE_ROCKSDB_TXN_H_

#include <rocksdb/status.h>

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "store/overlay_txn.h"

namespace rocksdb {
class DB;
}  // namespace rocksdb

namespace tickwheel::server {

// A group's transaction: the stored records come from one MultiGet of the
// group's ids (or a point read for an id a mutation did not name).
// Thread safety: one thread (the store's writer), for one group; it reads
// `db`, which must stay open while it lives (the writer holds the store's
// database lock shared). Its writes go nowhere: the writer turns its
// changes into a batch (AddToBatch, store/rocksdb_keys.h).
class RocksDbTxn final : public OverlayTxn {
 public:
  explicit RocksDbTxn(rocksdb::DB& db) : db_(db) {}

  // One MultiGet of the timers and schedules (ScheduleKey) of `ids` not
  // read yet.
  void Prefetch(const std::vector<std::string>& ids) override;

 protected:
  Result<std::optional<TimerRecord>> Load(const std::string& id) override;
  Result<std::optional<ScheduleRow>> LoadSchedule(const std::string& id) override;

 private:
  struct Fetched {
    rocksdb::Status status = rocksdb::Status::NotFound();
    std::string bytes;
  };
  struct FetchedSchedule {
    Fetched row;
    Fetched plan;
  };
  rocksdb::DB& db_;
  std::unordered_map<std::string, Fetched> fetched_;
  std::unordered_map<std::string, FetchedSchedule> fetched_schedules_;
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_STORE_ROCKSDB_TXN_H_
