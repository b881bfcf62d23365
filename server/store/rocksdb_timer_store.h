// SPDX-License-Identifier: Apache-2.0
// The embedded store: every timer in one RocksDB database in a directory.
#ifndef TICKWHEEL_SERVER_STORE_ROCKSDB_TIMER_STORE_H_
#define TICKWHEEL_SERVER_STORE_ROCKSDB_TIMER_STORE_H_

#include <memory>

#include "store/timer_store.h"

namespace rocksdb {
class Env;
}  // namespace rocksdb

namespace tickwheel::server {

// Keys (one column family, by prefix byte):
//   'r' id                         -> record (store/record_codec.h)
//   'd' be64(due_ms) id            -> ""  pending and delivering timers
//   's' state be64(updated_ms) id  -> ""  delivered, failed and cancelled
//                                         timers, by when they finished
//   "mcount" state                 -> int64 timers in that state (merged
//                                         deltas)
// Every mutation's changes to the record, its index keys and the counts go
// into one atomic WriteBatch with those of its group; a group is synced when
// one of its mutations asks (group commit: one fsync for many creates).
// The group's records are read with one MultiGet before its mutations run.
//
// A failed write fails its group with kUnavailable (nothing of it is
// written); the next group first asks RocksDB to resume from the error, so a
// disk that was full and has room again heals without a restart.
//
// `env` (tests): a RocksDB Env to inject faults with; nullptr for the
// default.
Result<std::unique_ptr<TimerStore>> OpenRocksDbTimerStore(const StoreOptions& options,
                                                          rocksdb::Env* env = nullptr);

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_STORE_ROCKSDB_TIMER_STORE_H_
