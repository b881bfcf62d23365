// SPDX-License-Identifier: Apache-2.0
// The embedded store's layout in RocksDB (store/rocksdb_timer_store.h lists
// the keys): the keys of records, of the due and state indexes, of flows'
// settings and of schedules, and schedules' values; the writes one change
// makes (AddToBatch); the upgrades of a store from before flows and of
// schedules' plans kept under their old prefix; and
// ReadError, a failed read as the store reports it.
// Thread safety: no state; any thread (the upgrades: see REQUIRES).
// The small key builders are inline: the scans call them per entry.
#ifndef TICKWHEEL_SERVER_STORE_ROCKSDB_KEYS_H_
#define TICKWHEEL_SERVER_STORE_ROCKSDB_KEYS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"
#include "store/overlay_txn.h"
#include "store/timer_store.h"

namespace rocksdb {
class DB;
struct ReadOptions;
class Status;
class WriteBatch;
}  // namespace rocksdb

namespace tickwheel::server {

inline constexpr char kRecordPrefix = 'r';
inline constexpr char kDuePrefix = 'd';
inline constexpr char kStatePrefix = 's';
inline constexpr char kFlowSettingsPrefix = 'F';
// Schedules: their rows by id (the plan apart: ScheduleRow::plan), and a
// state index (state, id) for listing. The plan, rewritten at every claim,
// sorts among the other keys that change all the time ('d' to 's'); the
// rows and their index, which change only when a client changes a
// schedule, sort apart from them ('S', 'T'), so that compacting the keys
// that change never rewrites the schedules' rows.
inline constexpr char kScheduleRecordPrefix = 'S';
inline constexpr char kSchedulePlanPrefix = 'p';
inline constexpr char kScheduleStatePrefix = 'T';
// Where plans were kept before (unreleased builds between 0.2.0 and this
// one): MovePlansToTheirPrefix moves them.
inline constexpr char kOldSchedulePlanPrefix = 'P';

// A prefix byte, then the id.
inline std::string PrefixedKey(char prefix, std::string_view id) {
  std::string k;
  k.reserve(1 + id.size());
  k.push_back(prefix);
  k.append(id);
  return k;
}

inline std::string RecordKey(std::string_view id) { return PrefixedKey(kRecordPrefix, id); }

// Times as 8 bytes that sort as the times do.
inline void AppendBigEndian(std::string& out, std::int64_t value) {
  // Offset so that negative times sort before positive ones.
  const std::uint64_t v = static_cast<std::uint64_t>(value) ^ (1ull << 63);
  for (int shift = 56; shift >= 0; shift -= 8) {
    out.push_back(static_cast<char>((v >> shift) & 0xff));
  }
}

inline std::int64_t ReadBigEndian(const char* p) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return static_cast<std::int64_t>(v ^ (1ull << 63));
}

inline constexpr std::size_t kDueIdOffset = 9;     // 'd' + 8 bytes of time
inline constexpr std::size_t kStateIdOffset = 10;  // 's' + state + 8 bytes of time

inline std::string DueKey(std::int64_t due_ms, std::string_view id) {
  std::string k;
  k.reserve(kDueIdOffset + id.size());
  k.push_back(kDuePrefix);
  AppendBigEndian(k, due_ms);
  k.append(id);
  return k;
}

inline std::string FlowSettingsKey(std::string_view flow) {
  return std::string(1, kFlowSettingsPrefix) + std::string(flow);
}

inline std::string StatePrefix(TimerState state) {
  return {kStatePrefix, static_cast<char>('0' + static_cast<int>(state))};
}

inline std::string StateKey(TimerState state, std::int64_t updated_ms, std::string_view id) {
  std::string k = StatePrefix(state);
  k.reserve(kStateIdOffset + id.size());
  AppendBigEndian(k, updated_ms);
  k.append(id);
  return k;
}

std::string CountKey(int state);
std::string ScheduleCountKey(int state);

inline std::string ScheduleRecordKey(std::string_view id) {
  return PrefixedKey(kScheduleRecordPrefix, id);
}
inline std::string SchedulePlanKey(std::string_view id) {
  return PrefixedKey(kSchedulePlanPrefix, id);
}

inline std::string ScheduleStatePrefix(std::uint8_t state) {
  return {kScheduleStatePrefix, static_cast<char>('0' + state)};
}

inline std::string ScheduleStateKey(std::uint8_t state, std::string_view id) {
  std::string k = ScheduleStatePrefix(state);
  k.append(id);
  return k;
}

// A schedule row's value: its state, then its record.
inline std::string EncodeScheduleValue(const ScheduleRow& row) {
  std::string v;
  v.reserve(1 + row.record.size());
  v.push_back(static_cast<char>(row.state));
  v.append(row.record);
  return v;
}

// kCorrupt for a value that is not one. `plan`: the value of its plan key
// ("" if it has none).
Result<ScheduleRow> DecodeScheduleValue(std::string_view id, std::string_view value,
                                        std::string plan = {});

// A schedule's row from the reads of its two keys (nullopt if the row's is
// not found; a plan not found is "").
Result<std::optional<ScheduleRow>> ScheduleRowFrom(std::string_view id,
                                                   const rocksdb::Status& row_status,
                                                   std::string_view row,
                                                   const rocksdb::Status& plan_status,
                                                   std::string plan);

// A schedule's row and its plan, with one MultiGet; nullopt if none.
Result<std::optional<ScheduleRow>> ReadScheduleRow(rocksdb::DB& db,
                                                   const rocksdb::ReadOptions& options,
                                                   std::string_view id);

// kUnavailable, saying the store's read failed and why.
Status ReadError(const rocksdb::Status& s);

// The keys one timer's change writes: its record, and its due-index or
// state-index key (scheduled timers are listed through the due index; only
// finished ones have a state-index key: fewer writes on the hot path).
void AddToBatch(const RecordChange& c, rocksdb::WriteBatch& batch);

// A schedule's row and its state-index key.
void AddToBatch(const ScheduleChange& c, rocksdb::WriteBatch& batch);

// A store written before flows gets each scheduled timer's flow into its
// due-index entry, once (then the marker key says so).
// REQUIRES: nothing else writes to `db` meanwhile (the store is opening).
Status AddFlowsToDueIndex(rocksdb::DB& db);

// Plans kept under kOldSchedulePlanPrefix are moved under
// kSchedulePlanPrefix (a store without any costs one seek).
// REQUIRES: nothing else writes to `db` meanwhile (the store is opening).
Status MovePlansToTheirPrefix(rocksdb::DB& db);

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_STORE_ROCKSDB_KEYS_H_
