// SPDX-License-Identifier: Apache-2.0
// PostgresTimerStore: the cluster's TimerStore, every timer in PostgreSQL,
// as OpenPostgresTimerStore returns it (store/postgres_timer_store.h says
// how it writes). Its methods are defined in two files:
// postgres_timer_store.cc (construction, reads, listings, counts, flow
// settings, metrics, Close) and pg_write_path.cc (Submit to commit: the
// group's transaction, the insert-only path, the lease check, the
// announcements).
#ifndef TICKWHEEL_SERVER_STORE_PG_STORE_H_
#define TICKWHEEL_SERVER_STORE_PG_STORE_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "store/group_writer.h"
#include "store/list_filter.h"
#include "store/overlay_txn.h"
#include "store/pg_connection.h"
#include "store/pg_pool.h"
#include "store/pg_rows.h"
#include "store/postgres_timer_store.h"
#include "store/timer_store.h"
#include "tickwheel/internal/periodic_thread.h"

namespace tickwheel::server {

// Schedules' states are counted in tickwheel_counts beside the timers',
// from this number on.
inline constexpr int kScheduleCountBase = 100;

// Thread safety: as TimerStore (store/timer_store.h). Reads, and
// UpdateFlowSettings, run on the caller's thread, on a connection taken
// from the pool for the call; writes run on the GroupWriter's threads,
// several groups at once (groups that share no id), each group on a
// connection of its own. The counts are atomics: writers add their deltas
// after a commit, and the counts thread reads them again from the database
// once a second. SetDueListener comes before the writes it should see.
// Close is idempotent.
// Owns its connection pool, its writer threads and its counts thread.
class PostgresTimerStore final : public TimerStore {
 public:
  PostgresTimerStore(const StoreOptions& options, int shards);
  ~PostgresTimerStore() override;

  void Submit(std::vector<std::string> ids, Mutation mutation, Done done,
              WriteOptions options) override;

  void SubmitAll(std::vector<Write> writes) override;

  Result<std::optional<TimerRecord>> Get(const std::string& id) const override;

  Result<DueScan> ScanDue(const std::vector<int>& shards, const DueEntry& from,
                          std::int64_t to_ms, std::size_t limit,
                          const FlowSet* skip) const override;

  Result<DueScan> ScanFlowDue(const std::string& flow, const std::vector<int>& shards,
                              const DueEntry& from, std::int64_t to_ms,
                              std::size_t limit) const override;

  Result<FlowCount> CountFlowDue(const std::string& flow, std::int64_t before_ms,
                                 std::size_t cap, const std::vector<int>* shards) const override;

  Result<std::optional<std::string>> UpdateFlowSettings(
      const std::string& flow, const FlowSettingsChange& change) override;

  Result<std::vector<std::pair<std::string, std::string>>> ListFlowSettings() const override;

  // Two steps, each bounded: the keys of the rows looked at (at most the
  // scan budget, filtered in SQL by id prefix and host; no record), then
  // the records of the rows that go on the page, fetched in chunks of at
  // most kFetchBytes until the page is full. Rows written before the host
  // column existed (host NULL) pass the SQL filter and are checked on
  // their decoded record.
  Result<ListPage> List(TimerState state, const std::optional<ListCursor>& after,
                        std::size_t limit, std::size_t max_bytes,
                        const ListFilter& filter) const override;
  // A chunk of a listing's records holds about this many bytes at most.
  static constexpr std::int64_t kFetchBytes = 4 << 20;

  Result<std::vector<std::int64_t>> CountDue(const std::vector<std::int64_t>& before_ms,
                                             std::size_t cap) const override;

  Result<std::uint64_t> ApproximateBytes() const override;

  Result<std::optional<ClusterState>> Cluster() const override;

  Result<std::vector<std::string>> FinishedBefore(TimerState state, std::int64_t before_ms,
                                                  std::size_t limit) const override;

  StateCounts Counts() const override;

  Result<std::unique_ptr<StoreSnapshot>> Snapshot() const override;

  Status Checkpoint(const std::string&) override;

  Result<std::optional<ScheduleRow>> GetSchedule(const std::string& id) const override;

  // Two steps, as List: the ids and record sizes of the rows looked at
  // (at most the scan budget; no record), then the records of the rows
  // that go on the page, in binary form (no hex text twice their size).
  Result<SchedulePage> ListSchedules(std::optional<std::uint8_t> state, const std::string& after,
                                     std::size_t limit, std::size_t max_bytes,
                                     const std::string& prefix) const override;

  ScheduleCounts CountSchedules() const override;

  Result<std::vector<TimerRecord>> LastWithPrefix(const std::string& prefix,
                                                  const std::string& before,
                                                  std::size_t limit) const override;

  int shard_count() const override { return shards_; }
  int ShardOf(std::string_view id) const override { return ShardOfId(id, shards_); }
  void SetDueListener(DueListener listener) override;

  void AppendMetrics(std::string& out) const override;

  void Close() override;

 private:
  // Reads the counts (totals plus deltas not yet folded), and every few
  // seconds folds the deltas into the totals.
  void RefreshCounts();

  void WriteGroup(std::vector<QueuedWrite>& group);

  // The shards, among `shards`, whose lease this node holds now (checked and
  // locked FOR SHARE in the open transaction).
  Result<std::set<int>> ValidLeases(PgConnection& c, const std::set<int>& shards);

  // The insert-only path, for a group of creates of new ids (most creates):
  // one statement, committed on its own (autocommit; durable, as
  // synchronous_commit is on outside the claims' transactions), that inserts
  // the rows, their count deltas and their announcements: no BEGIN, no
  // SELECT ... FOR UPDATE, no COMMIT, one round trip.
  // The mutations first run against a store where every id is absent. If
  // every id they read became an insert (and nothing else changed), the
  // INSERT checks that view: it fails with a unique violation, and writes
  // nothing, if one of the ids exists or another transaction is creating
  // it (after waiting for that one to end). Returns true if the group was
  // written (`results` and `changes` are its own), false if it is not for
  // this path or an id existed: nothing was written, and the caller runs
  // the general transaction, which reads the rows and answers 200 or 409.
  // Fenced writes never take this path. A group of kPgCopyRows rows or
  // more goes by CopyInsertOnly instead of the one statement.
  Result<bool> TryInsertOnly(PgConnection& c, std::vector<QueuedWrite>& group,
                             std::vector<Status>& results, std::vector<RecordChange>& changes);

  // The insert-only path for a large group (a batch create): BEGIN, the
  // rows by `COPY ... FROM STDIN (FORMAT binary)`, their count deltas and
  // announcements (`notices`, a text array of pg_notify payloads), COMMIT.
  // PostgreSQL inserts a COPY's rows in bulk (measured: a sixth less of its
  // time per row than INSERT ... SELECT; docs/performance.md), for three
  // round trips more than the one statement. kPgCopyRows is an estimate of
  // where that pays (measured at 1,000 rows, not near the threshold). A
  // unique violation (an id exists) is kConflict, nothing written.
  Status CopyInsertOnly(PgConnection& c, const Rows& inserts, const StateCounts& delta,
                        std::string notices);

  static bool IsScheduleKeyOf(const std::string& id);

  // The insert-only paths' end: `WITH` items that append the count deltas
  // ($first, $first+1: AppendCountDeltas's) and send the announcements
  // ($first+2, a text array of pg_notify payloads), then the SELECT that
  // runs them.
  static std::string DeltasAndNotices(int first);

  // The count deltas' parameters (states, deltas) for
  // `INSERT INTO tickwheel_count_deltas ... unnest($n::smallint[], $n+1::bigint[])`;
  // schedules' states from kScheduleCountBase.
  static void AppendCountDeltas(const StateCounts& delta, PgParams& params,
                                const ScheduleCounts& schedule_delta = {});

  // What the changes announce to the owners of their shards: timers newly
  // due soon, and cancels (so the owner drops them); what the owner itself
  // completes needs no announcement.
  std::vector<DueNotice> Notices(const std::vector<RecordChange>& changes) const;

  // The group's transaction; with `insert_only`, first the insert-only path
  // (TryInsertOnly) when the group is only creates of new ids.
  Status Transaction(PgConnection& c, std::vector<QueuedWrite>& group,
                     std::vector<Status>& results, std::vector<RecordChange>& changes,
                     bool insert_only);

  // The schedules' net changes: one INSERT, UPDATE and DELETE of many rows.
  Status WriteSchedules(PgConnection& c, const std::vector<ScheduleChange>& changes);

  static std::int64_t WallNowMs();

  const StoreOptions options_;
  const int shards_;
  mutable PgPool pool_;
  DueListener listener_;  // set before the writes it should see
  std::array<std::atomic<std::int64_t>, kNumStates> counts_{};
  std::array<std::atomic<std::int64_t>, kScheduleStates> schedule_counts_{};
  std::atomic<std::uint64_t> write_errors_{0};
  std::atomic<std::uint64_t> retries_{0};
  std::atomic<bool> closed_{false};
  std::uint64_t refreshes_ = 0;  // by the counts thread (and the constructor)
  std::unique_ptr<internal::PeriodicThread> counts_thread_;
  std::unique_ptr<GroupWriter> writer_;
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_STORE_PG_STORE_H_
