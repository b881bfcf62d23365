// SPDX-License-Identifier: Apache-2.0
#include "store/postgres_timer_store.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <map>
#include <set>

#include "store/group_writer.h"
#include "store/overlay_txn.h"
#include "store/pg_connection.h"
#include "store/postgres_schema.h"
#include "store/record_codec.h"
#include "store/shard_fence.h"
#include "tickwheel/internal/mutex.h"
#include "tickwheel/internal/periodic_thread.h"

namespace tickwheel::server {

int ShardOfId(std::string_view id, int shards) {
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char c : id) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return static_cast<int>(h % static_cast<std::uint64_t>(shards));
}

std::vector<std::string> EncodeDuePayloads(const std::string& node_id,
                                           const std::vector<DueNotice>& notices) {
  constexpr std::size_t kMaxPayload = 7900;
  std::vector<std::string> out;
  std::string current;
  for (const DueNotice& n : notices) {
    std::string line = std::to_string(n.shard) + " " +
                       (n.due_ms ? std::to_string(*n.due_ms) : std::string("-")) + " " + n.id +
                       "\n";
    if (!current.empty() && current.size() + line.size() > kMaxPayload) {
      out.push_back(std::move(current));
      current.clear();
    }
    if (current.empty()) current = node_id + "\n";
    current += line;
  }
  if (!current.empty()) out.push_back(std::move(current));
  return out;
}

std::optional<DuePayload> DecodeDuePayload(std::string_view payload) {
  DuePayload out;
  std::size_t nl = payload.find('\n');
  if (nl == std::string_view::npos) return std::nullopt;
  out.node_id = std::string(payload.substr(0, nl));
  payload.remove_prefix(nl + 1);
  while (!payload.empty()) {
    nl = payload.find('\n');
    if (nl == std::string_view::npos) return std::nullopt;
    const std::string_view line = payload.substr(0, nl);
    payload.remove_prefix(nl + 1);
    const std::size_t a = line.find(' ');
    const std::size_t b = a == std::string_view::npos ? a : line.find(' ', a + 1);
    if (b == std::string_view::npos) return std::nullopt;
    DueNotice n;
    if (std::from_chars(line.data(), line.data() + a, n.shard).ec != std::errc()) return std::nullopt;
    const std::string_view due = line.substr(a + 1, b - a - 1);
    if (due != "-") {
      std::int64_t ms = 0;
      if (std::from_chars(due.data(), due.data() + due.size(), ms).ec != std::errc()) {
        return std::nullopt;
      }
      n.due_ms = ms;
    }
    n.id = std::string(line.substr(b + 1));
    out.notices.push_back(std::move(n));
  }
  return out;
}

namespace {

// Connections for the store's threads: taken for one statement or one
// transaction, given back if still healthy.
class PgPool {
 public:
  explicit PgPool(std::string conninfo) : conninfo_(std::move(conninfo)) {}

  Result<std::unique_ptr<PgConnection>> Take() {
    {
      internal::MutexLock lock(mutex_);
      if (!idle_.empty()) {
        std::unique_ptr<PgConnection> c = std::move(idle_.back());
        idle_.pop_back();
        return c;
      }
    }
    return PgConnection::Connect(conninfo_);
  }
  void Give(std::unique_ptr<PgConnection> c) {
    if (!c || !c->healthy()) return;
    internal::MutexLock lock(mutex_);
    idle_.push_back(std::move(c));
  }
  void Clear() {
    internal::MutexLock lock(mutex_);
    idle_.clear();
  }

 private:
  const std::string conninfo_;
  internal::Mutex mutex_;
  std::vector<std::unique_ptr<PgConnection>> idle_ TW_GUARDED_BY(mutex_);
};

// Runs `fn(connection)` on a pooled connection.
template <typename Fn>
auto WithConnection(PgPool& pool, Fn fn) -> decltype(fn(std::declval<PgConnection&>())) {
  Result<std::unique_ptr<PgConnection>> c = pool.Take();
  if (!c.ok()) return c.status();
  auto result = fn(**c);
  pool.Give(std::move(*c));
  return result;
}

Result<std::optional<TimerRecord>> DecodeRow(const std::string& id, const std::string& bytes) {
  Result<TimerRecord> r = DecodeRecord(id, bytes);
  if (!r.ok()) return r.status();
  return std::optional<TimerRecord>(std::move(*r));
}

// A group's transaction: the group's rows, read (and locked) at its start.
class PgTxn final : public OverlayTxn {
 public:
  explicit PgTxn(std::map<std::string, std::string> rows) : rows_(std::move(rows)) {}

 protected:
  Result<std::optional<TimerRecord>> Load(const std::string& id) override {
    auto it = rows_.find(id);
    if (it == rows_.end()) return std::optional<TimerRecord>();
    return DecodeRow(id, it->second);
  }

 private:
  std::map<std::string, std::string> rows_;
};

// The insert-only path's transaction: every id reads as absent, and the ids
// read are remembered, so the path can check that the INSERT covers them.
class InsertOnlyTxn final : public OverlayTxn {
 public:
  const std::set<std::string>& read() const { return read_; }

 protected:
  Result<std::optional<TimerRecord>> Load(const std::string& id) override {
    read_.insert(id);
    return std::optional<TimerRecord>();
  }

 private:
  std::set<std::string> read_;
};

constexpr char kTimerColumns[] = "id, shard, state, due_ms, updated_ms, record";
constexpr char kUnnestRows[] =
    "unnest($1::text[], $2::int[], $3::smallint[], $4::bigint[], $5::bigint[], $6::bytea[])";

// The columns of rows to write, as array parameters.
struct Rows {
  std::vector<std::string> ids, records;
  std::vector<std::int64_t> shards, states, due, updated;
  void Add(const TimerRecord& r, int shard) {
    ids.push_back(r.id);
    shards.push_back(shard);
    states.push_back(static_cast<std::int64_t>(r.state));
    due.push_back(r.due_ms);
    updated.push_back(r.updated_ms);
    records.push_back(EncodeRecord(r));
  }
  PgParams Params() const {
    return {PgTextArray(ids),       PgBigintArray(shards),  PgBigintArray(states),
            PgBigintArray(due),     PgBigintArray(updated), PgByteaArray(records)};
  }
  bool empty() const { return ids.empty(); }
};

// An export's view of the cluster's store: one connection of its own in a
// REPEATABLE READ READ ONLY transaction, opened when the snapshot is taken
// and read page by page (a keyset over the primary key, in id order) until
// it is destroyed. Every page sees the database as of the transaction's
// first statement. While it is open, PostgreSQL keeps the row versions it
// may read (VACUUM waits), so exports expire when left idle.
class PgSnapshot final : public StoreSnapshot {
 public:
  static Result<std::unique_ptr<StoreSnapshot>> Take(const std::string& conninfo) {
    Result<std::unique_ptr<PgConnection>> c = PgConnection::Connect(conninfo);
    if (!c.ok()) return c.status();
    std::unique_ptr<PgSnapshot> out(new PgSnapshot(std::move(*c)));
    PgConnection& conn = *out->conn_;
    if (Status s = conn.ExecScript("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"); !s.ok()) {
      return s;
    }
    // The snapshot is taken by the transaction's first statement: this one.
    Result<PgResult> r = conn.Exec(
        "SELECT c.state, c.n + coalesce((SELECT sum(delta) FROM tickwheel_count_deltas d "
        "WHERE d.state = c.state), 0), (extract(epoch from now()) * 1000)::bigint "
        "FROM tickwheel_counts c");
    if (!r.ok()) return r.status();
    for (int i = 0; i < r->rows(); ++i) {
      const std::int64_t state = r->Int(i, 0);
      if (state >= 0 && state < kNumStates) out->counts_[state] = r->Int(i, 1);
      out->taken_ms_ = r->Int(i, 2);
    }
    return std::unique_ptr<StoreSnapshot>(std::move(out));
  }
  ~PgSnapshot() override {
    if (conn_->healthy()) conn_->Rollback();
  }

  Result<Page> Timers(const std::optional<std::string>& after, std::size_t limit,
                      std::size_t max_bytes, unsigned states) override {
    std::vector<std::int64_t> wanted;
    for (int i = 0; i < kNumStates; ++i) {
      if (states & (1u << i)) wanted.push_back(i);
    }
    // What is looked at (by id, the primary key): the page's rows when
    // every state is wanted, else the scan budget; records only of the
    // states asked for.
    const std::size_t scan =
        states == kAllStates ? std::min(limit, kPageScanBudget) : kPageScanBudget;
    Result<PgResult> r = conn_->Exec(
        "SELECT id, CASE WHEN state = ANY($3::smallint[]) THEN record END FROM "
        "tickwheel_timers WHERE id > $1 ORDER BY id LIMIT $2",
        {after.value_or(""), std::to_string(scan),
         PgBigintArray(wanted)});
    if (!r.ok()) return r.status();
    Page page;
    std::size_t bytes = 0;
    int i = 0;
    for (; i < r->rows() && page.records.size() < limit &&
           (bytes < max_bytes || page.records.empty());
         ++i) {
      std::string id(r->Text(i, 0));
      page.next = id;
      if (r->IsNull(i, 1)) continue;
      Result<TimerRecord> record = DecodeRecord(id, r->Bytes(i, 1));
      if (!record.ok()) return record.status();
      bytes += 256 + record->payload.size() + record->target.size();
      page.records.push_back(std::move(*record));
    }
    const bool more = static_cast<std::size_t>(r->rows()) == scan || i < r->rows();
    if (!more) page.next.reset();
    return page;
  }
  const StateCounts& counts() const override { return counts_; }
  std::int64_t taken_ms() const override { return taken_ms_; }

 private:
  explicit PgSnapshot(std::unique_ptr<PgConnection> conn) : conn_(std::move(conn)) {}
  std::unique_ptr<PgConnection> conn_;
  StateCounts counts_{};
  std::int64_t taken_ms_ = 0;
};

class PostgresTimerStore final : public TimerStore {
 public:
  PostgresTimerStore(const StoreOptions& options, int shards)
      : options_(options), shards_(shards), pool_(options.postgres) {
    RefreshCounts();
    counts_thread_ = std::make_unique<internal::PeriodicThread>(
        SystemClock::Instance(), std::chrono::seconds(1), [this] { RefreshCounts(); });
    writer_ = std::make_unique<GroupWriter>(
        options.writer_threads, GroupWriter::Limits{.max_writes = 64, .max_ids = 5000},
        [this](std::vector<QueuedWrite>& group) { WriteGroup(group); });
  }
  ~PostgresTimerStore() override { Close(); }

  void Submit(std::vector<std::string> ids, Mutation mutation, Done done,
              WriteOptions options) override {
    writer_->Submit({std::move(ids), std::move(mutation), std::move(done), options});
  }

  Result<std::optional<TimerRecord>> Get(const std::string& id) const override {
    return WithConnection(pool_, [&](PgConnection& c) -> Result<std::optional<TimerRecord>> {
      Result<PgResult> r = c.Exec("SELECT record FROM tickwheel_timers WHERE id = $1", {id});
      if (!r.ok()) return r.status();
      if (r->rows() == 0) return std::optional<TimerRecord>();
      return DecodeRow(id, r->Bytes(0, 0));
    });
  }

  Result<std::vector<DueEntry>> ScanDue(const std::vector<int>& shards, const DueEntry& from,
                                        std::int64_t to_ms, std::size_t limit) const override {
    std::vector<std::int64_t> list(shards.begin(), shards.end());
    return WithConnection(pool_, [&](PgConnection& c) -> Result<std::vector<DueEntry>> {
      Result<PgResult> r = c.Exec(
          "SELECT due_ms, id FROM tickwheel_timers WHERE state IN (0, 1) "
          "AND shard = ANY($1::int[]) AND (due_ms, id) >= ($2, $3) AND due_ms < $4 "
          "ORDER BY due_ms, id LIMIT $5",
          {PgBigintArray(list), std::to_string(std::max<std::int64_t>(from.due_ms, INT64_MIN + 1)),
           from.id, std::to_string(to_ms), std::to_string(std::min<std::size_t>(limit, INT32_MAX))});
      if (!r.ok()) return r.status();
      std::vector<DueEntry> out;
      out.reserve(static_cast<std::size_t>(r->rows()));
      for (int i = 0; i < r->rows(); ++i) out.push_back({r->Int(i, 0), std::string(r->Text(i, 1))});
      return out;
    });
  }

  Result<ListPage> List(TimerState state, const std::optional<ListCursor>& after,
                        std::size_t limit, std::size_t max_bytes,
                        const ListFilter& filter) const override {
    const bool scheduled = IsScheduled(state);
    const std::string time = scheduled ? "due_ms" : "updated_ms";
    // The inner scan is what is "looked at": the page's rows unfiltered, or
    // the scan budget when a filter may drop rows; records only of the ids
    // that match (the host is checked here, on the decoded record).
    const std::size_t scan = filter.empty() ? std::min(limit, kListScanBudget) : kListScanBudget;
    return WithConnection(pool_, [&](PgConnection& c) -> Result<ListPage> {
      Result<PgResult> r = c.Exec(
          "SELECT id, t, CASE WHEN starts_with(id, $5) THEN record END FROM (SELECT id, record, " +
              time + " AS t FROM tickwheel_timers WHERE state = $1 AND (" + time +
              ", id) > ($2, $3) ORDER BY " + time + ", id LIMIT $4) s ORDER BY t, id",
          {std::to_string(static_cast<int>(state)),
           std::to_string(after ? after->time_ms : INT64_MIN + 1), after ? after->id : "",
           std::to_string(scan), filter.id_prefix});
      if (!r.ok()) return r.status();
      ListPage page;
      std::size_t bytes = 0;
      int i = 0;
      for (; i < r->rows() && page.records.size() < limit &&
             (bytes < max_bytes || page.records.empty());
           ++i) {
        const std::string id(r->Text(i, 0));
        page.next = ListCursor{r->Int(i, 1), id};
        if (r->IsNull(i, 2)) continue;
        Result<std::optional<TimerRecord>> record = DecodeRow(id, r->Bytes(i, 2));
        if (!record.ok()) return record.status();
        if (!filter.Matches(**record)) continue;
        bytes += 256 + (*record)->payload.size() + (*record)->target.size();
        page.records.push_back(std::move(**record));
      }
      const bool more = static_cast<std::size_t>(r->rows()) == scan || i < r->rows();
      if (!more) page.next.reset();
      return page;
    });
  }

  Result<std::vector<std::int64_t>> CountDue(const std::vector<std::int64_t>& before_ms,
                                             std::size_t cap) const override {
    std::vector<std::int64_t> counts(before_ms.size(), 0);
    if (before_ms.empty()) return counts;
    const std::int64_t last = *std::max_element(before_ms.begin(), before_ms.end());
    std::string sql = "SELECT ";
    PgParams params;
    for (std::size_t i = 0; i < before_ms.size(); ++i) {
      sql += (i ? ", " : "") + std::string("count(*) FILTER (WHERE due_ms < $") +
             std::to_string(i + 1) + ")";
      params.push_back(std::to_string(before_ms[i]));
    }
    sql += " FROM (SELECT due_ms FROM tickwheel_timers WHERE state IN (0, 1) AND due_ms < $" +
           std::to_string(params.size() + 1) + " ORDER BY due_ms LIMIT $" +
           std::to_string(params.size() + 2) + ") d";
    params.push_back(std::to_string(last));
    params.push_back(std::to_string(std::min<std::size_t>(cap, INT32_MAX)));
    return WithConnection(pool_, [&](PgConnection& c) -> Result<std::vector<std::int64_t>> {
      Result<PgResult> r = c.Exec(sql, params);
      if (!r.ok()) return r.status();
      for (std::size_t i = 0; i < counts.size(); ++i) counts[i] = r->Int(0, static_cast<int>(i));
      return counts;
    });
  }

  Result<std::uint64_t> ApproximateBytes() const override {
    return WithConnection(pool_, [&](PgConnection& c) -> Result<std::uint64_t> {
      Result<PgResult> r = c.Exec("SELECT pg_total_relation_size('tickwheel_timers')");
      if (!r.ok()) return r.status();
      return static_cast<std::uint64_t>(r->Int(0, 0));
    });
  }

  Result<std::optional<ClusterState>> Cluster() const override {
    return WithConnection(pool_, [&](PgConnection& c) -> Result<std::optional<ClusterState>> {
      auto ms = [](const std::string& column) {
        return "(extract(epoch from " + column + ") * 1000)::bigint";
      };
      Result<PgResult> nodes = c.Exec("SELECT node_id, " + ms("started_at") + ", " +
                                      ms("expires_at") + ", " + ms("now()") +
                                      " FROM tickwheel_nodes ORDER BY node_id");
      if (!nodes.ok()) return nodes.status();
      Result<PgResult> leases = c.Exec("SELECT shard, coalesce(owner, ''), epoch, " +
                                       ms("expires_at") + ", " + ms("now()") +
                                       " FROM tickwheel_shard_leases ORDER BY shard");
      if (!leases.ok()) return leases.status();
      ClusterState out;
      for (int i = 0; i < nodes->rows(); ++i) {
        out.nodes.push_back({std::string(nodes->Text(i, 0)), nodes->Int(i, 1), nodes->Int(i, 2)});
        out.now_ms = nodes->Int(i, 3);
      }
      for (int i = 0; i < leases->rows(); ++i) {
        out.leases.push_back({static_cast<int>(leases->Int(i, 0)), std::string(leases->Text(i, 1)),
                              leases->Int(i, 2), leases->Int(i, 3)});
        out.now_ms = leases->Int(i, 4);
      }
      return std::optional<ClusterState>(std::move(out));
    });
  }

  Result<std::vector<std::string>> FinishedBefore(TimerState state, std::int64_t before_ms,
                                                  std::size_t limit) const override {
    return WithConnection(pool_, [&](PgConnection& c) -> Result<std::vector<std::string>> {
      Result<PgResult> r = c.Exec(
          "SELECT id FROM tickwheel_timers WHERE state = $1 AND updated_ms < $2 "
          "ORDER BY updated_ms, id LIMIT $3",
          {std::to_string(static_cast<int>(state)), std::to_string(before_ms),
           std::to_string(limit)});
      if (!r.ok()) return r.status();
      std::vector<std::string> ids;
      for (int i = 0; i < r->rows(); ++i) ids.emplace_back(r->Text(i, 0));
      return ids;
    });
  }

  StateCounts Counts() const override {
    StateCounts out;
    for (int i = 0; i < kNumStates; ++i) out[i] = counts_[i].load();
    return out;
  }

  Result<std::unique_ptr<StoreSnapshot>> Snapshot() const override {
    return PgSnapshot::Take(options_.postgres);
  }

  Status Checkpoint(const std::string&) override {
    return Status::Invalid(
        "backup_unsupported",
        "this node's store is PostgreSQL: back it up with pg_dump or pg_basebackup "
        "(docs/operations.md, Backup); tickwheel backup copies the embedded store");
  }

  int shard_count() const override { return shards_; }
  int ShardOf(std::string_view id) const override { return ShardOfId(id, shards_); }
  void SetDueListener(DueListener listener) override { listener_ = std::move(listener); }

  void AppendMetrics(std::string& out) const override {
    out += "# HELP tickwheel_store_write_errors_total Store transactions that failed.\n"
           "# TYPE tickwheel_store_write_errors_total counter\ntickwheel_store_write_errors_total " +
           std::to_string(write_errors_.load()) +
           "\n# HELP tickwheel_store_transaction_retries_total Transactions run again after a "
           "conflict with another node's.\n"
           "# TYPE tickwheel_store_transaction_retries_total counter\n"
           "tickwheel_store_transaction_retries_total " +
           std::to_string(retries_.load()) + "\n";
  }

  void Close() override {
    if (closed_.exchange(true)) return;
    writer_->Close();
    counts_thread_.reset();
    pool_.Clear();
  }

 private:
  // Reads the counts (totals plus deltas not yet folded), and every few
  // seconds folds the deltas into the totals.
  void RefreshCounts() {
    (void)WithConnection(pool_, [&](PgConnection& c) -> Status {
      if (++refreshes_ % 5 == 0) {
        Status folded = c.Exec(
            "WITH d AS (DELETE FROM tickwheel_count_deltas RETURNING state, delta), "
            "s AS (SELECT state, sum(delta) AS total FROM d GROUP BY state) "
            "UPDATE tickwheel_counts c SET n = c.n + s.total FROM s WHERE c.state = s.state")
                            .status();
        if (!folded.ok()) return folded;
      }
      Result<PgResult> r = c.Exec(
          "SELECT c.state, c.n + coalesce((SELECT sum(delta) FROM tickwheel_count_deltas d "
          "WHERE d.state = c.state), 0) FROM tickwheel_counts c");
      if (!r.ok()) return r.status();
      for (int i = 0; i < r->rows(); ++i) {
        const std::int64_t state = r->Int(i, 0);
        if (state >= 0 && state < kNumStates) counts_[state].store(r->Int(i, 1));
      }
      return Status::Ok();
    });
  }

  void WriteGroup(std::vector<QueuedWrite>& group) {
    std::vector<Status> results;
    std::vector<RecordChange> changes;
    Result<std::unique_ptr<PgConnection>> conn = pool_.Take();
    Status written = conn.ok() ? Status::Ok() : conn.status();
    for (int attempt = 0; written.ok() && attempt < 4; ++attempt) {
      written = Transaction(**conn, group, results, changes, /*insert_only=*/attempt == 0);
      if (written.code() != StatusCode::kConflict || written.reason() != "retry_transaction") break;
      retries_.fetch_add(1);
      if (attempt == 3) break;
      written = Status::Ok();
    }
    if (conn.ok()) pool_.Give(std::move(*conn));
    if (!written.ok()) {
      write_errors_.fetch_add(1);
      if (written.code() == StatusCode::kConflict) {
        written = Status::Unavailable("the store kept conflicting with another node: " +
                                      written.message());
      }
    } else if (listener_) {
      for (const auto& [id, due] : DueChanges(changes)) listener_(id, due);
    }
    for (std::size_t i = 0; i < group.size(); ++i) {
      if (group[i].done) group[i].done(written.ok() ? results[i] : written);
    }
  }

  // The shards, among `shards`, whose lease this node holds now (checked and
  // locked FOR SHARE in the open transaction).
  Result<std::set<int>> ValidLeases(PgConnection& c, const std::set<int>& shards) {
    std::vector<std::int64_t> list, epochs;
    for (int s : shards) {
      std::optional<std::int64_t> epoch = options_.fence ? options_.fence->EpochOf(s) : std::nullopt;
      if (!epoch) continue;
      list.push_back(s);
      epochs.push_back(*epoch);
    }
    std::set<int> valid;
    if (list.empty()) return valid;
    Result<PgResult> r = c.Exec(
        "SELECT l.shard FROM tickwheel_shard_leases l "
        "JOIN unnest($1::int[], $2::bigint[]) AS m(shard, epoch) "
        "ON l.shard = m.shard AND l.epoch = m.epoch "
        "WHERE l.owner = $3 AND l.expires_at > clock_timestamp() ORDER BY l.shard FOR SHARE OF l",
        {PgBigintArray(list), PgBigintArray(epochs), options_.node_id});
    if (!r.ok()) return r.status();
    for (int i = 0; i < r->rows(); ++i) valid.insert(static_cast<int>(r->Int(i, 0)));
    return valid;
  }

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
  // Fenced writes never take this path.
  Result<bool> TryInsertOnly(PgConnection& c, std::vector<QueuedWrite>& group,
                             std::vector<Status>& results, std::vector<RecordChange>& changes) {
    for (const QueuedWrite& w : group) {
      if (w.options.fenced) return false;
    }
    results.assign(group.size(), Status::Ok());
    InsertOnlyTxn txn;
    for (std::size_t i = 0; i < group.size(); ++i) {
      txn.Begin();
      results[i] = txn.End(group[i].mutation(txn));
    }
    changes = txn.Changes();
    std::vector<const TimerRecord*> rows;
    for (const RecordChange& change : changes) {
      if (change.before || !change.after) return false;
      rows.push_back(&*change.after);
    }
    if (rows.size() != txn.read().size()) return false;  // an id read but not created
    if (rows.empty()) return true;  // the results did not depend on the store
    // In id order, so two such INSERTs of common ids wait on each other
    // instead of deadlocking.
    std::sort(rows.begin(), rows.end(),
              [](const TimerRecord* a, const TimerRecord* b) { return a->id < b->id; });
    Rows inserts;
    for (const TimerRecord* r : rows) inserts.Add(*r, ShardOf(r->id));
    const StateCounts delta = CountDelta(changes);
    PgParams params = inserts.Params();
    AppendCountDeltas(delta, params);
    params.push_back(PgTextArray(EncodeDuePayloads(options_.node_id, Notices(changes))));
    Result<PgResult> r = c.Exec(
        std::string("WITH t AS (INSERT INTO tickwheel_timers (") + kTimerColumns +
            ") SELECT * FROM " + kUnnestRows +
            "), d AS (INSERT INTO tickwheel_count_deltas (state, delta) "
            "SELECT * FROM unnest($7::smallint[], $8::bigint[])), "
            "n AS MATERIALIZED (SELECT pg_notify('" + std::string(kDueChannel) +
            "', p) FROM unnest($9::text[]) p) SELECT count(*) FROM n",
        params);
    if (!r.ok()) {
      if (r.status().code() == StatusCode::kConflict) return false;
      return r.status();
    }
    for (int i = 0; i < kNumStates; ++i) counts_[i].fetch_add(delta[i]);
    return true;
  }

  // The count deltas' parameters (states, deltas) for
  // `INSERT INTO tickwheel_count_deltas ... unnest($n::smallint[], $n+1::bigint[])`.
  static void AppendCountDeltas(const StateCounts& delta, PgParams& params) {
    std::vector<std::int64_t> states, deltas;
    for (int i = 0; i < kNumStates; ++i) {
      if (delta[i] == 0) continue;
      states.push_back(i);
      deltas.push_back(delta[i]);
    }
    params.push_back(PgBigintArray(states));
    params.push_back(PgBigintArray(deltas));
  }

  // What the changes announce to the owners of their shards: timers newly
  // due soon, and cancels (so the owner drops them); what the owner itself
  // completes needs no announcement.
  std::vector<DueNotice> Notices(const std::vector<RecordChange>& changes) const {
    std::vector<DueNotice> notices;
    const std::int64_t horizon = WallNowMs() + options_.notify_horizon_ms;
    for (const RecordChange& change : changes) {
      const bool cancelled = change.after && change.after->state == TimerState::kCancelled &&
                             change.before && IsScheduled(change.before->state);
      const bool due_soon = change.after && IsScheduled(change.after->state) &&
                            change.after->due_ms < horizon &&
                            (!change.before || !IsScheduled(change.before->state) ||
                             change.before->due_ms != change.after->due_ms);
      if (cancelled) notices.push_back({ShardOf(change.after->id), std::nullopt, change.after->id});
      if (due_soon) notices.push_back({ShardOf(change.after->id), change.after->due_ms, change.after->id});
    }
    return notices;
  }

  // The group's transaction; with `insert_only`, first the insert-only path
  // (TryInsertOnly) when the group is only creates of new ids.
  Status Transaction(PgConnection& c, std::vector<QueuedWrite>& group,
                     std::vector<Status>& results, std::vector<RecordChange>& changes,
                     bool insert_only) {
    if (insert_only) {
      Result<bool> inserted = TryInsertOnly(c, group, results, changes);
      if (!inserted.ok()) return inserted.status();
      if (*inserted) return Status::Ok();
    }
    results.assign(group.size(), Status::Ok());
    bool sync = false;
    std::set<int> fenced_shards;
    std::vector<std::string> ids;
    for (const QueuedWrite& w : group) {
      sync = sync || w.options.sync;
      for (const std::string& id : w.ids) {
        ids.push_back(id);
        if (w.options.fenced) fenced_shards.insert(ShardOf(id));
      }
    }
    Status s = c.ExecScript(sync ? "BEGIN" : "BEGIN; SET LOCAL synchronous_commit = off");
    if (!s.ok()) return s;
    auto fail = [&](Status status) {
      c.Rollback();
      return status;
    };
    Result<std::set<int>> valid = ValidLeases(c, fenced_shards);
    if (!valid.ok()) return fail(valid.status());
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    Result<PgResult> rows = c.Exec(
        "SELECT id, record FROM tickwheel_timers WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE",
        {PgTextArray(ids)});
    if (!rows.ok()) return fail(rows.status());
    std::map<std::string, std::string> stored;
    for (int i = 0; i < rows->rows(); ++i) stored.emplace(rows->Text(i, 0), rows->Bytes(i, 1));
    PgTxn txn(std::move(stored));
    for (std::size_t i = 0; i < group.size(); ++i) {
      QueuedWrite& w = group[i];
      if (w.options.fenced &&
          std::any_of(w.ids.begin(), w.ids.end(),
                      [&](const std::string& id) { return !valid->count(ShardOf(id)); })) {
        results[i] = Status::Fenced("this node no longer holds the lease of the timer's shard");
        continue;
      }
      txn.Begin();
      results[i] = txn.End(w.mutation(txn));
    }
    changes = txn.Changes();
    if (changes.empty()) return c.Commit();
    Rows inserts, updates;
    std::vector<std::string> deletes;
    for (const RecordChange& change : changes) {
      const std::string& id = change.after ? change.after->id : change.before->id;
      const int shard = ShardOf(id);
      if (!change.after) {
        deletes.push_back(id);
      } else if (change.before) {
        updates.Add(*change.after, shard);
      } else {
        inserts.Add(*change.after, shard);
      }
    }
    const std::vector<DueNotice> notices = Notices(changes);
    if (!inserts.empty()) {
      s = c.Exec(std::string("INSERT INTO tickwheel_timers (") + kTimerColumns + ") SELECT * FROM " +
                     kUnnestRows,
                 inserts.Params())
              .status();
      if (!s.ok()) return fail(s);
    }
    if (!updates.empty()) {
      s = c.Exec(std::string("UPDATE tickwheel_timers t SET shard = v.shard, state = v.state, "
                             "due_ms = v.due_ms, updated_ms = v.updated_ms, record = v.record "
                             "FROM ") +
                     kUnnestRows + " AS v(" + kTimerColumns + ") WHERE t.id = v.id",
                 updates.Params())
              .status();
      if (!s.ok()) return fail(s);
    }
    if (!deletes.empty()) {
      s = c.Exec("DELETE FROM tickwheel_timers WHERE id = ANY($1::text[])", {PgTextArray(deletes)})
              .status();
      if (!s.ok()) return fail(s);
    }
    const StateCounts delta = CountDelta(changes);
    if (std::any_of(delta.begin(), delta.end(), [](std::int64_t d) { return d != 0; })) {
      PgParams params;
      AppendCountDeltas(delta, params);
      s = c.Exec("INSERT INTO tickwheel_count_deltas (state, delta) "
                 "SELECT * FROM unnest($1::smallint[], $2::bigint[])",
                 params)
              .status();
      if (!s.ok()) return fail(s);
    }
    if (!notices.empty()) {
      s = c.Exec("SELECT pg_notify('" + std::string(kDueChannel) + "', p) FROM unnest($1::text[]) p",
                 {PgTextArray(EncodeDuePayloads(options_.node_id, notices))})
              .status();
      if (!s.ok()) return fail(s);
    }
    if (!valid->empty()) {
      // The leases were good when the transaction began; they must still be
      // when it commits (it may have waited on locks, or its node paused).
      std::vector<std::int64_t> shards(valid->begin(), valid->end());
      Result<PgResult> still = c.Exec(
          "SELECT count(*) FROM tickwheel_shard_leases WHERE shard = ANY($1::int[]) "
          "AND owner = $2 AND expires_at > clock_timestamp()",
          {PgBigintArray(shards), options_.node_id});
      if (!still.ok()) return fail(still.status());
      if (still->Int(0, 0) != static_cast<std::int64_t>(shards.size())) {
        return fail(Status::Conflict("retry_transaction",
                                     "a lease expired during the transaction"));
      }
    }
    s = c.Commit();
    if (!s.ok()) return fail(s);
    for (int i = 0; i < kNumStates; ++i) counts_[i].fetch_add(delta[i]);
    return Status::Ok();
  }

  static std::int64_t WallNowMs() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }

  const StoreOptions options_;
  const int shards_;
  mutable PgPool pool_;
  DueListener listener_;  // set before the writes it should see
  std::array<std::atomic<std::int64_t>, kNumStates> counts_{};
  std::atomic<std::uint64_t> write_errors_{0};
  std::atomic<std::uint64_t> retries_{0};
  std::atomic<bool> closed_{false};
  std::uint64_t refreshes_ = 0;  // by the counts thread (and the constructor)
  std::unique_ptr<internal::PeriodicThread> counts_thread_;
  std::unique_ptr<GroupWriter> writer_;
};

}  // namespace

Result<std::unique_ptr<TimerStore>> OpenPostgresTimerStore(const StoreOptions& options) {
  Result<std::unique_ptr<PgConnection>> conn = PgConnection::Connect(options.postgres);
  if (!conn.ok()) return conn.status();
  Result<int> shards = MigrateSchema(**conn, options.shards);
  if (!shards.ok()) return shards.status();
  return std::unique_ptr<TimerStore>(new PostgresTimerStore(options, *shards));
}

}  // namespace tickwheel::server
