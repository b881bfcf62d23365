// TimerStore: every timer, durably, in RocksDB; the single writer that
// serializes all state transitions and group-commits them.
#ifndef TICKWHEEL_SERVER_STORE_TIMER_STORE_H_
#define TICKWHEEL_SERVER_STORE_TIMER_STORE_H_

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "store/timer_record.h"

namespace rocksdb {
class DB;
class WriteBatch;
}  // namespace rocksdb

namespace tickwheel::server {

// Empty message: success.
struct Status {
  std::string message;
  bool ok() const { return message.empty(); }
};

using StateCounts = std::array<std::int64_t, kNumStates>;

// The view a mutation has of the store while the writer runs it: reads see
// the writes of earlier mutations of the same group. Put keeps the due
// index, the state index and the per-state counts in step with the record.
class StoreTxn {
 public:
  // The record of `id`, or nullopt.
  std::optional<TimerRecord> Get(const std::string& id);
  // Replaces `before` (nullopt: a new timer) by `after` (same id).
  // REQUIRES: `before` is what Get returned in this mutation.
  void Put(const std::optional<TimerRecord>& before, const TimerRecord& after);

 private:
  friend class TimerStore;
  StoreTxn(rocksdb::DB& db, rocksdb::WriteBatch& batch) : db_(db), batch_(batch) {}

  rocksdb::DB& db_;
  rocksdb::WriteBatch& batch_;
  std::unordered_map<std::string, TimerRecord> overlay_;
  StateCounts delta_{};
};

// One entry of the due index.
struct DueEntry {
  std::int64_t due_ms;
  std::string id;
};

// Keys (one column family, by prefix byte):
//   'r' id                 -> encoded TimerRecord
//   'd' be64(due_ms) id    -> ""   for pending and delivering timers
//   's' state id           -> ""   delivered, failed and cancelled timers
//                                  (pending and delivering ones are listed
//                                  from the due index)
//   'm' "counts"           -> per-state counts, written with every group
//
// Thread safety: all methods may be called from any thread. Mutations run
// one at a time, in submission order, on the store's writer thread; reads
// run on the caller's thread and see every write whose `done` has been
// called.
// Cost: one RocksDB write (one WAL fsync when any mutation asked for it)
// per group of mutations queued while the previous group was written.
//
//   store->Submit([&](StoreTxn& txn) { txn.Put(std::nullopt, record); },
//                 [](const Status& s) { /* durable now, if s.ok() */ },
//                 /*sync=*/true);
class TimerStore {
 public:
  using Mutation = std::function<void(StoreTxn&)>;
  using Done = std::function<void(const Status&)>;

  // Opens (creating if needed) the store in `dir`. On failure returns null
  // and sets `error` to a message that says what to do.
  static std::unique_ptr<TimerStore> Open(const std::string& dir,
                                          std::string* error);
  ~TimerStore();

  // Queues `mutation`; after the group containing it is written (synced to
  // disk if `sync` or another mutation of the group asked for it), calls
  // `done` on the writer thread, in submission order. After Close, `done`
  // gets an error and the mutation does not run.
  void Submit(Mutation mutation, Done done, bool sync);

  std::optional<TimerRecord> Get(const std::string& id) const;

  // Due entries with from_ms <= due_ms < to_ms, in (due_ms, id) order, at
  // most `limit` of them.
  std::vector<DueEntry> ScanDue(std::int64_t from_ms, std::int64_t to_ms,
                                std::size_t limit) const;

  // Records in `state` after the one with id `after_id` ("" for the start),
  // at most `limit`: pending and delivering timers in due-time order,
  // the other states in id order.
  std::vector<TimerRecord> List(TimerState state, const std::string& after_id,
                                std::size_t limit) const;

  // Timers per state, as of the last written group.
  StateCounts Counts() const;

  // Nanoseconds spent in the last group's write (for metrics), and groups.
  std::uint64_t groups_written() const { return groups_.load(); }

  // Observer of each group write: (mutations, sync, write duration ns).
  void SetWriteObserver(std::function<void(std::size_t, bool, std::int64_t)> f) {
    observer_ = std::move(f);
  }

  // Writes what is queued, stops the writer and closes the database.
  // Idempotent.
  void Close();

 private:
  struct Op {
    Mutation mutation;
    Done done;
    bool sync;
  };

  explicit TimerStore(rocksdb::DB* db);
  void WriterLoop();

  rocksdb::DB* db_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<Op> queue_;  // GUARDED_BY(mutex_)
  bool closing_ = false;   // GUARDED_BY(mutex_)
  StateCounts counts_{};   // GUARDED_BY(mutex_)
  std::atomic<std::uint64_t> groups_{0};
  std::function<void(std::size_t, bool, std::int64_t)> observer_;
  std::thread writer_;
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_STORE_TIMER_STORE_H_
