// TimerStore: every timer, durably, in RocksDB; writer threads that apply
// state transitions atomically, one at a time per timer.
#ifndef TICKWHEEL_SERVER_STORE_TIMER_STORE_H_
#define TICKWHEEL_SERVER_STORE_TIMER_STORE_H_

#include <array>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "store/timer_record.h"

namespace rocksdb {
class DB;
class Statistics;
class WriteBatch;
}  // namespace rocksdb

namespace tickwheel::server {

// Empty message: success.
struct Status {
  std::string message;
  bool ok() const { return message.empty(); }
};

using StateCounts = std::array<std::int64_t, kNumStates>;

// The view a mutation has of the store while it runs: reads see the
// writes of the mutation and of those before it in its group. Put keeps the due index, the state index
// and the per-state counts in step with the record.
class StoreTxn {
 public:
  // The record of `id`, or nullopt. REQUIRES: `id` is one of the ids the
  // mutation was submitted with (so no other mutation changes it meanwhile).
  std::optional<TimerRecord> Get(const std::string& id);
  // Replaces `before` (nullopt: a new timer) by `after` (same id).
  // REQUIRES: `before` is what Get returned in this mutation.
  void Put(const std::optional<TimerRecord>& before, const TimerRecord& after);
  // Deletes the timer and its index keys (retention).
  // REQUIRES: `before` is what Get returned in this mutation.
  void Erase(const TimerRecord& before);

 private:
  friend class TimerStore;
  StoreTxn(rocksdb::DB& db, rocksdb::WriteBatch& batch) : db_(db), batch_(batch) {}

  rocksdb::DB& db_;
  rocksdb::WriteBatch& batch_;
  std::unordered_map<std::string, TimerRecord> overlay_;
  std::unordered_set<std::string> erased_;
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
//   's' state be64(updated_ms) id -> ""   delivered, failed and cancelled
//                                  timers, by when they finished (listing,
//                                  retention; pending and delivering ones
//                                  are listed from the due index)
//   'm' "count" state      -> int64, the number of timers in that state
//                                  (merged: every write adds its deltas)
//
// Thread safety: all methods may be called from any thread. A mutation
// names the ids it touches; mutations with an id in common never run at
// the same time (striped locks), others run in parallel on the store's
// writer threads. Group commit: a writer takes everything queued (up to
// 256 mutations), runs them in order on one transaction and writes them
// in one atomic RocksDB write; writers running at the same time also share
// WAL fsyncs (RocksDB's own group commit). So durable creates from many
// clients cost one fsync per group, not one each. Reads run on the
// caller's thread and see every write whose `done` has been called.
// Cost: per mutation, a point read per timer it reads and a few keys
// written; per group, one WAL append and at most one fsync.
//
//   store->Submit({record.id},
//                 [&](StoreTxn& txn) { txn.Put(std::nullopt, record); },
//                 [](const Status& s) { /* durable now, if s.ok() */ },
//                 /*sync=*/true);
class TimerStore {
 public:
  using Mutation = std::function<void(StoreTxn&)>;
  using Done = std::function<void(const Status&)>;

  // Opens (creating if needed) the store in `dir`. On failure returns null
  // and sets `error` to a message that says what to do.
  static std::unique_ptr<TimerStore> Open(const std::string& dir,
                                          std::string* error,
                                          unsigned writer_threads = 8);
  ~TimerStore();

  // Queues `mutation` over the timers `ids`. A writer thread locks them,
  // runs it, writes its changes atomically with its group (WAL synced if
  // `sync` or another mutation of the group asked for it), then calls
  // `done` while still holding the locks (so effects of `done`, such
  // as arming the scheduler, happen in commit order per id). After Close,
  // `done` gets an error and the mutation does not run.
  void Submit(std::vector<std::string> ids, Mutation mutation, Done done,
              bool sync);

  std::optional<TimerRecord> Get(const std::string& id) const;

  // Due entries with from_ms <= due_ms < to_ms, in (due_ms, id) order, at
  // most `limit` of them.
  std::vector<DueEntry> ScanDue(std::int64_t from_ms, std::int64_t to_ms,
                                std::size_t limit) const;

  // Records in `state` after the one with id `after_id` ("" for the start),
  // at most `limit`: pending and delivering timers in due-time order (from
  // the due index, which holds both: at most kListScanBudget entries are
  // looked at per call), the other states in the order they finished. If there may be
  // more, `*resume_after` (if given) is set to the id to continue after,
  // else cleared.
  std::vector<TimerRecord> List(TimerState state, const std::string& after_id,
                                std::size_t limit,
                                std::string* resume_after = nullptr) const;
  static constexpr std::size_t kListScanBudget = 10'000;

  // Ids of timers that reached `state` (delivered, failed or cancelled)
  // before `before_ms`, oldest first, at most `limit` (for retention).
  std::vector<std::string> FinishedBefore(TimerState state, std::int64_t before_ms,
                                          std::size_t limit) const;

  // Timers per state, as of the last completed write.
  StateCounts Counts() const;

  // WAL fsyncs so far (RocksDB statistics).
  std::uint64_t wal_syncs() const;

  // Observer of each write: (mutations in it, sync, duration ns). Set
  // before use.
  void SetWriteObserver(std::function<void(std::size_t, bool, std::int64_t)> f) {
    observer_ = std::move(f);
  }

  // Runs what is queued, stops the writers and closes the database.
  // Idempotent.
  void Close();

 private:
  struct Op {
    std::vector<std::string> ids;
    Mutation mutation;
    Done done;
    bool sync;
  };
  static constexpr std::size_t kStripes = 4096;
  static constexpr std::size_t kMaxGroup = 256;        // mutations per write
  static constexpr std::size_t kMaxGroupIds = 20'000;  // ids per write

  TimerStore(rocksdb::DB* db, std::shared_ptr<rocksdb::Statistics> stats);
  void WriterLoop();
  void Run(std::vector<Op>& group);

  rocksdb::DB* db_;
  std::shared_ptr<rocksdb::Statistics> stats_;
  std::array<std::atomic<std::int64_t>, kNumStates> counts_{};
  std::unique_ptr<std::mutex[]> stripes_{new std::mutex[kStripes]};
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Op> queue_;  // GUARDED_BY(mutex_)
  bool closing_ = false;  // GUARDED_BY(mutex_)
  bool closed_ = false;   // GUARDED_BY(mutex_)
  std::function<void(std::size_t, bool, std::int64_t)> observer_;
  std::vector<std::thread> writers_;
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_STORE_TIMER_STORE_H_
