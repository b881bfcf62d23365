// SPDX-License-Identifier: Apache-2.0
// TimerStore: where every timer lives, durably. The interface the API,
// scheduler, dispatcher and retention are written against; OpenTimerStore
// picks the implementation (RocksDB in a data directory, or PostgreSQL), as
// leveldb's DB::Open hides DBImpl.
#ifndef TICKWHEEL_SERVER_STORE_TIMER_STORE_H_
#define TICKWHEEL_SERVER_STORE_TIMER_STORE_H_

#include <array>
#include <compare>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "common/status.h"
#include "store/list_filter.h"
#include "timer/timer_record.h"

namespace tickwheel::server {

using StateCounts = std::array<std::int64_t, kNumStates>;

// A schedule (server/schedule/) as the stores keep it: its record is
// encoded and decoded by the schedule service; the store keeps it with the
// schedule's timers (the same shard as its occurrences, ShardKeyOf), indexes
// it by id and by state, and counts it by state.
// The record is in two parts: `plan`, which changes at every occurrence,
// and `record`, the rest, which changes only when the schedule is changed;
// a store writes only the part that changed ("" plan: the whole schedule is
// in `record`, as written before the split).
struct ScheduleRow {
  std::string id;
  std::uint8_t state = 0;  // < kScheduleStates; what it means is schedule/'s
  std::string record;      // the encoded schedule
  std::string plan;        // where its planning stands
  friend bool operator==(const ScheduleRow&, const ScheduleRow&) = default;
};
inline constexpr int kScheduleStates = 3;
using ScheduleCounts = std::array<std::int64_t, kScheduleStates>;

// The key a mutation names a schedule by, among the ids it is submitted
// with: the schedule's id and '@' (no id has an '@' but an occurrence's:
// timer/occurrence_id.h). A schedule's key and its occurrences share a
// shard.
inline std::string ScheduleKey(std::string_view schedule_id) {
  std::string key(schedule_id);
  key.push_back('@');
  return key;
}
inline bool IsScheduleKey(std::string_view key) { return !key.empty() && key.back() == '@'; }

// What one mutation sees of the store while it runs: its reads see its own
// writes and those of the mutations before it in the same atomic write.
// Put keeps every index and the per-state counts in step with the record.
class StoreTxn {
 public:
  virtual ~StoreTxn() = default;

  // The record of `id`, or nullopt if there is none; kCorrupt if the stored
  // bytes cannot be read (a newer format, damage), in which case the
  // mutation must not write that id (a Put or Erase of it fails the
  // mutation). REQUIRES: `id` is one of the ids the mutation was submitted
  // with (so no other mutation changes it meanwhile).
  virtual Result<std::optional<TimerRecord>> Get(const std::string& id) = 0;
  // Replaces `before` (nullopt: a new timer) by `after` (same id).
  // REQUIRES: `before` is what Get returned in this mutation.
  virtual void Put(const std::optional<TimerRecord>& before, const TimerRecord& after) = 0;
  // The same, taking `after` (no copy of the record).
  virtual void Put(const std::optional<TimerRecord>& before, TimerRecord&& after) {
    Put(before, static_cast<const TimerRecord&>(after));
  }
  // Deletes the timer and its index entries (retention).
  // REQUIRES: `before` is what Get returned in this mutation.
  virtual void Erase(const TimerRecord& before) = 0;

  // Schedules, as Get, Put and Erase for timers. REQUIRES: ScheduleKey(id)
  // is one of the ids the mutation was submitted with.
  virtual Result<std::optional<ScheduleRow>> GetSchedule(const std::string& id) = 0;
  virtual void PutSchedule(const std::optional<ScheduleRow>& before, const ScheduleRow& after) = 0;
  virtual void EraseSchedule(const ScheduleRow& before) = 0;

  // A hint: the mutation is about to Get these timers, which it did not
  // name (the occurrences of a schedule it named: whoever holds a
  // schedule's key may read and write its occurrences). The store may read
  // them at once (one MultiGet, one SELECT) rather than one by one.
  virtual void Prefetch(const std::vector<std::string>& ids) { (void)ids; }
};

struct WriteOptions {
  // Durable (fsynced, or committed by PostgreSQL) before `done` is called.
  bool sync = false;
  // Only while this node holds the leases of the ids' shards (cluster mode;
  // the embedded store owns everything): otherwise the mutation fails with
  // kFenced and writes nothing. Claims and outcomes of attempts are fenced.
  bool fenced = false;
  // The calling thread may run the write itself, and call `done` on it,
  // when no other write is queued or in progress (a store that supports
  // it: the embedded one): two thread hand-offs fewer for a lone write, at
  // the price of blocking the caller for the write (and its fsync). For
  // callers whose `done` only hands the result on (the HTTP handlers post
  // it to the connection's executor), never one that holds a lock `done`
  // takes.
  bool may_run_on_caller = false;
};

// One entry of the due index: a pending or delivering timer, and its flow.
// Also a position in the index: entries order (and equal) by (due_ms, id);
// the flow is carried along, not compared.
struct DueEntry {
  std::int64_t due_ms;
  std::string id;
  std::string flow;
  friend std::strong_ordering operator<=>(const DueEntry& a, const DueEntry& b) {
    if (auto c = a.due_ms <=> b.due_ms; c != 0) return c;
    return a.id <=> b.id;
  }
  friend bool operator==(const DueEntry& a, const DueEntry& b) {
    return a.due_ms == b.due_ms && a.id == b.id;
  }
};

// What ScanDue found: the entries it returns, and where it stopped if it
// stopped early for having looked at enough.
struct DueScan {
  std::vector<DueEntry> entries;
  // Set when it stopped before to_ms after looking at its budget of
  // entries (skipped ones included): everything before this position was
  // looked at; a scan from here goes on.
  std::optional<DueEntry> resume;
};

// Flows whose entries a scan skips (a scheduler's deferred flows).
using FlowSet = std::unordered_set<std::string>;

// A position in a listing: the (time, id) of the last entry looked at. The
// time is due_ms for pending and delivering timers, updated_ms (when they
// finished) for the others.
struct ListCursor {
  std::int64_t time_ms = 0;
  std::string id;
};

struct ListPage {
  std::vector<TimerRecord> records;
  std::optional<ListCursor> next;  // set while there may be more
};

// A page of schedules, in id order.
struct SchedulePage {
  std::vector<ScheduleRow> rows;
  std::optional<std::string> next;  // the last id looked at, while there may be more
};

// A cluster as its database sees it (GET /v1/cluster): the nodes that
// heartbeat and the lease of every shard. Times are Unix ms by the
// database's clock.
struct ClusterNode {
  std::string node_id;
  std::string instance;  // the process running as it
  std::int64_t started_ms = 0;
  std::int64_t expires_ms = 0;  // its heartbeat lapses then
  std::optional<std::int64_t> clock_offset_ms;  // its wall clock minus the database's
};
struct ShardLease {
  int shard = 0;
  std::string owner;  // "node_id#instance"; "" when no node holds it
  std::int64_t epoch = 0;
  std::int64_t expires_ms = 0;
};
struct ClusterState {
  std::int64_t now_ms = 0;  // the database's clock when it was read
  std::vector<ClusterNode> nodes;
  std::vector<ShardLease> leases;  // by shard
};

// A consistent view of every timer as of one moment (an export): what it
// reads is what the store held then, whatever was written since.
//
// Thread safety: one caller at a time. It holds resources of the store (a
// RocksDB snapshot, which keeps old versions from compaction; a PostgreSQL
// connection in an open REPEATABLE READ transaction) until destroyed.
// REQUIRES: destroyed before its store.
class StoreSnapshot {
 public:
  struct Page {
    std::vector<TimerRecord> records;
    std::optional<std::string> next;  // the last id looked at, while there may be more
  };

  virtual ~StoreSnapshot() = default;
  // Timers with id > `after` (from the first if nullopt), in id order
  // (bytewise), of the states in `states` (bit 1 << state): at most `limit`,
  // stopping once the records reach `max_bytes` (at least one is returned if
  // there is one). Looks at kPageScanBudget timers at most, so a page can be
  // short, even empty, and still have a `next`.
  virtual Result<Page> Timers(const std::optional<std::string>& after, std::size_t limit,
                              std::size_t max_bytes, unsigned states) = 0;
  static constexpr std::size_t kPageScanBudget = 10'000;
  // Every schedule (ScheduleRow) and every flow's stored settings (key,
  // settings as the flow layer encodes them) in the snapshot, in key order,
  // read whole: an export holds them in memory at its end (they are few
  // next to the timers: a schedule's record is about a kilobyte).
  struct Rest {
    std::vector<ScheduleRow> schedules;
    std::vector<std::pair<std::string, std::string>> flows;
  };
  virtual Result<Rest> SchedulesAndFlows() = 0;
  // Timers per state in the snapshot.
  const StateCounts& counts() const { return counts_; }
  // When it was taken, Unix ms (the database's clock for PostgreSQL).
  std::int64_t taken_ms() const { return taken_ms_; }

 protected:
  // Set by the store as it takes the snapshot.
  StateCounts counts_{};
  std::int64_t taken_ms_ = 0;
};
inline constexpr unsigned kAllStates = (1u << kNumStates) - 1;

// Told of every change to when a timer is due, once it is committed:
// `due_ms` is its new due time, or nullopt when it stopped being scheduled
// (delivered, failed, cancelled, deleted); `flow` is the timer's flow. Calls
// for one id come in commit order. A claim (the same due time) is not a
// change.
using DueListener = std::function<void(const std::string& id, std::optional<std::int64_t> due_ms,
                                       const std::string& flow)>;

// Thread safety: every method may be called from any thread.
//
//   store.Submit({id},
//                [&](StoreTxn& txn) -> Status { txn.Put(std::nullopt, record); return {}; },
//                [](const Status& s) { /* durable now, if s.ok() */ },
//                {.sync = true});
class TimerStore {
 public:
  // Runs on a store thread; its writes count only if it returns ok.
  using Mutation = std::function<Status(StoreTxn&)>;
  using Done = std::function<void(const Status&)>;

  virtual ~TimerStore() = default;

  // Queues `mutation` over the timers `ids` (and the schedules named by
  // ScheduleKey among them). Mutations with an id in common
  // never run at the same time; each runs whole or not at all. `done` gets
  // the mutation's own status, or the write's if that failed (kUnavailable:
  // nothing of it was written), and runs before the ids are free for the
  // next mutation (so what it does, like answering a client, follows commit
  // order per id). After Close, `done` gets kUnavailable at once.
  virtual void Submit(std::vector<std::string> ids, Mutation mutation, Done done,
                      WriteOptions options) = 0;

  // What Submit takes, for SubmitAll.
  struct Write {
    std::vector<std::string> ids;
    Mutation mutation;
    Done done;
    WriteOptions options;
  };
  // Submits each of `writes`, in order, with nothing queued between them,
  // so the store may commit them in one transaction (a fired batch's
  // per-shard claims, say). Each write keeps its own status: one that is
  // fenced or fails fails no other. The default submits them one by one.
  virtual void SubmitAll(std::vector<Write> writes) {
    for (Write& w : writes) {
      Submit(std::move(w.ids), std::move(w.mutation), std::move(w.done), w.options);
    }
  }

  // The record of `id` as of the last completed write; nullopt if none.
  virtual Result<std::optional<TimerRecord>> Get(const std::string& id) const = 0;

  // Due entries of the given shards with `from` <= (due_ms, id) and
  // due_ms < to_ms, in (due_ms, id) order, at most `limit`, without those
  // of the flows in `skip` (may be null). It looks at no more than `limit`
  // entries plus kSkipBudget skipped ones: past that it stops and says
  // where (DueScan::resume), so a scan behind a deferred flow's backlog of
  // millions costs a bounded time per call.
  virtual Result<DueScan> ScanDue(const std::vector<int>& shards, const DueEntry& from,
                                  std::int64_t to_ms, std::size_t limit,
                                  const FlowSet* skip = nullptr) const = 0;
  static constexpr std::size_t kSkipBudget = 100'000;

  // Due entries of `flow` of the given shards with `from` <= (due_ms, id)
  // and due_ms < to_ms, in (due_ms, id) order, at most `limit`. PostgreSQL
  // reads a per-flow index; the embedded store walks its due index, looking
  // at no more than kSkipBudget entries of other flows before it stops and
  // says where (DueScan::resume).
  virtual Result<DueScan> ScanFlowDue(const std::string& flow, const std::vector<int>& shards,
                                      const DueEntry& from, std::int64_t to_ms,
                                      std::size_t limit) const = 0;
  // How many timers of `flow` (pending and delivering) of `shards` (null:
  // all) are due before `before_ms`, counting up to `cap`. `at_least`: the
  // real number may be larger (it reached `cap`; or the embedded store,
  // which walks its due index, looked at 10 * cap entries of every flow
  // first).
  struct FlowCount {
    std::int64_t count = 0;
    bool at_least = false;
  };
  virtual Result<FlowCount> CountFlowDue(const std::string& flow, std::int64_t before_ms,
                                         std::size_t cap,
                                         const std::vector<int>* shards = nullptr) const = 0;

  // Flow settings (server/flow/), kept as the flow layer encodes them.
  // Changes flow `flow`'s settings atomically (against other nodes' changes
  // too): `change` gets what is stored (nullopt: none) and returns what to
  // store (nullopt: delete them), or an error (then nothing is written).
  // Returns what is stored after it. Durable (fsynced, or committed) when it
  // returns: it blocks for that, so never call it on an I/O thread.
  // kUnavailable if it could not be written.
  using FlowSettingsChange =
      std::function<Result<std::optional<std::string>>(const std::optional<std::string>& stored)>;
  virtual Result<std::optional<std::string>> UpdateFlowSettings(
      const std::string& flow, const FlowSettingsChange& change) = 0;
  // Every flow's stored settings, by key.
  virtual Result<std::vector<std::pair<std::string, std::string>>> ListFlowSettings() const = 0;

  // Timers in `state` after `after` (from the start if nullopt): pending and
  // delivering ones by due time, the others by when they finished; of them,
  // those `filter` matches. Looks at kListScanBudget index entries at most
  // (matching or not) and stops once the records reach `max_bytes` (at least
  // one is returned if there is one), so a page can be short, even empty,
  // and still have a `next`. `next` only moves forward.
  virtual Result<ListPage> List(TimerState state, const std::optional<ListCursor>& after,
                                std::size_t limit, std::size_t max_bytes,
                                const ListFilter& filter) const = 0;
  static constexpr std::size_t kListScanBudget = 10'000;

  // For each bound of `before_ms`, how many timers of the due index
  // (pending and delivering) are due before it, overdue ones included, as
  // of the last completed write. Looks at `cap` entries at most: a count of
  // `cap` means "cap or more". Costs O(min(cap, due before the last bound)).
  virtual Result<std::vector<std::int64_t>> CountDue(const std::vector<std::int64_t>& before_ms,
                                                     std::size_t cap) const = 0;

  // About how many bytes the store takes (RocksDB's tables and memtables,
  // or PostgreSQL's timers table with its indexes).
  virtual Result<std::uint64_t> ApproximateBytes() const = 0;

  // The cluster sharing this store; nullopt for the embedded store (one
  // node, no leases).
  virtual Result<std::optional<ClusterState>> Cluster() const = 0;

  // Ids of timers that reached `state` (delivered, failed or cancelled)
  // before `before_ms`, oldest first, at most `limit` (for retention).
  virtual Result<std::vector<std::string>> FinishedBefore(TimerState state,
                                                          std::int64_t before_ms,
                                                          std::size_t limit) const = 0;

  // Timers per state, as of the last completed write.
  virtual StateCounts Counts() const = 0;

  // A snapshot of every timer as of now (see StoreSnapshot).
  virtual Result<std::unique_ptr<StoreSnapshot>> Snapshot() const = 0;

  // A consistent copy of the store as of one moment, while it serves, in
  // `dir` (which must not exist; its parent must): for the embedded store a
  // RocksDB checkpoint that `tickwheel serve --data-dir dir` opens (tables
  // hard-linked when `dir` is on the same filesystem, copied otherwise).
  // Every write completed before the call is in it. Blocks for the copy.
  // kInvalidArgument for the PostgreSQL store (pg_dump and pg_basebackup
  // back it up), or for a `dir` that exists.
  virtual Status Checkpoint(const std::string& dir) = 0;

  // The schedule `id`, as of the last completed write; nullopt if none.
  virtual Result<std::optional<ScheduleRow>> GetSchedule(const std::string& id) const = 0;
  // Schedules with ids after `after` ("": from the first) in id order, in
  // `state` (any if nullopt), whose ids start with `prefix`; at most `limit`,
  // looking at kListScanBudget at most, and stopping once their records
  // (ScheduleRow::record) reach `max_bytes` (at least one is returned if
  // there is one): so a page may be short, even empty, and still have
  // `next`. Only the page's records are read.
  virtual Result<SchedulePage> ListSchedules(std::optional<std::uint8_t> state,
                                             const std::string& after, std::size_t limit,
                                             std::size_t max_bytes,
                                             const std::string& prefix) const = 0;
  // Schedules per state (ScheduleRow::state), as of the last completed write.
  virtual ScheduleCounts CountSchedules() const = 0;
  // The timers whose ids start with `prefix` and sort before `before` ("":
  // no bound), highest id first, at most `limit` (a schedule's last
  // occurrences: their ids sort by time).
  virtual Result<std::vector<TimerRecord>> LastWithPrefix(const std::string& prefix,
                                                          const std::string& before,
                                                          std::size_t limit) const = 0;

  // The number of shards timers are spread over (1 for the embedded store)
  // and the shard of `id` (of its ShardKeyOf: a schedule's key and its
  // occurrences are in the schedule's shard). The scheduler loads the
  // shards this node owns.
  virtual int shard_count() const = 0;
  virtual int ShardOf(std::string_view id) const = 0;

  // REQUIRES: not called while a write is in progress (set it before the
  // writes it should see).
  virtual void SetDueListener(DueListener listener) = 0;

  // Appends the store's own gauges (Prometheus text), e.g. WAL syncs.
  virtual void AppendMetrics(std::string& out) const = 0;

  // Runs what is queued, then closes. Idempotent.
  virtual void Close() = 0;
};

// Observer of each atomic write: (mutations in it, synced, duration ns).
using WriteObserver = std::function<void(std::size_t, bool, std::int64_t)>;

class ShardFence;

struct StoreOptions {
  std::string data_dir;  // the embedded RocksDB store, unless `postgres` is set
  // Threads writing groups: the PostgreSQL store's overlap their round
  // trips. Four: with eight, 64 clients' single creates went 5 to a
  // transaction on one node and 3.4 on each of three, and PostgreSQL (the
  // limit on shared cores) spent its CPU on transactions; with four, 9-10
  // and 5, and the creates' rate against a bare INSERT's went from a
  // median 1.02x / 0.78x to 1.28x / 1.19x (docs/performance.md). The
  // embedded store uses one (RocksDB writes its log one group at a time;
  // more writer threads only added wake-ups: fewer creates per fsync and
  // more CPU per create).
  unsigned writer_threads = 4;
  // Honour WriteOptions::may_run_on_caller (the embedded store). Only with
  // at least two HTTP threads: the one running a write blocks, and with a
  // single one nothing else would be read meanwhile (every create its own
  // fsync at any load: measured 1.7 k/s instead of 21 k/s at 64 clients).
  bool lone_writes_on_caller = false;
  WriteObserver observer;
  // Called when the store cannot tell which writes it reported as failed
  // were kept after all (the embedded store reopened after a write error:
  // its log may still hold them). What mirrors the store (the scheduler)
  // should look at it again. May be empty.
  std::function<void()> resync;

  // Cluster mode: the PostgreSQL store.
  std::string postgres;       // a postgresql:// URL or key=value conninfo
  int shards = 0;             // when the schema is created (0: 256); fixed after
  std::string node_id;        // this process, as leases and notifications name it ("node#instance")
  const ShardFence* fence = nullptr;  // this node's leases; must outlive the store
  // Changes to timers due within this much of now are announced to the
  // other nodes (NOTIFY), so that the owner of their shard arms them.
  std::int64_t notify_horizon_ms = 60'000;
};

// Opens (creating or migrating its schema if needed) the store: PostgreSQL
// if `options.postgres` is set, else RocksDB in `options.data_dir`. Fails
// with kUnavailable (or kInvalidArgument for a conflicting --shards) and a
// message that says what to do.
Result<std::unique_ptr<TimerStore>> OpenTimerStore(const StoreOptions& options);

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_STORE_TIMER_STORE_H_
