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
//   'd' be64(due_ms) id            -> flow  pending and delivering timers
//   's' state be64(updated_ms) id  -> ""    delivered, failed and cancelled
//                                           timers, by when they finished
//   'F' flow                       -> settings of a flow (flow/flow_settings.h)
//   'S' id                         -> a schedule: its state, then its record
//   'T' state id                   -> ""    schedules by state
//   'p' id                         -> the schedule's plan (ScheduleRow::plan;
//                                     none for a row from before the split),
//                                     among the keys that change all the time
//   "mschedules" state             -> int64 schedules in that state
//   "mcount" state                 -> int64 timers in that state (merged
//                                         deltas)
//   "mflows"                       -> "1" once the due index carries flows
//                                     (a store from before flows gets them
//                                     at its first open by this version)
// No second index by flow: a flow's due timers are found by walking the due
// index (its values say each one's flow), which costs reads only when a
// flow has a backlog, where a second key per timer would cost every create,
// every outcome and every restart (the log replays a third more keys).
//
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
