// SPDX-License-Identifier: Apache-2.0
#include "store/postgres_timer_store.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <set>

#include "store/group_writer.h"
#include "store/list_filter.h"
#include "store/overlay_txn.h"
#include "store/pg_connection.h"
#include "store/pg_pool.h"
#include "store/pg_rows.h"
#include "store/pg_snapshot.h"
#include "store/pg_txn.h"
#include "store/postgres_schema.h"
#include "store/record_codec.h"
#include "store/shard_fence.h"
#include "timer/occurrence_id.h"
#include "tickwheel/internal/periodic_thread.h"

namespace tickwheel::server {

int ShardOfId(std::string_view id, int shards) {
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char c : ShardKeyOf(id)) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return static_cast<int>(h % static_cast<std::uint64_t>(shards));
}

namespace {

// Schedules' states are counted in tickwheel_counts beside the timers',
// from this number on.
constexpr int kScheduleCountBase = 100;

class PostgresTimerStore final : public TimerStore {
 public:
  PostgresTimerStore(const StoreOptions& options, int shards)
      : options_(options), shards_(shards), pool_(options.postgres) {
    RefreshCounts();
    counts_thread_ = std::make_unique<internal::PeriodicThread>(
        SystemClock::Instance(), std::chrono::seconds(1), [this] { RefreshCounts(); });
    // Creates go on several transactions at once; a node's claims and
    // outcomes on two at most, so that a herd's gather (measured: 7
    // deliveries per transaction when they went on 8 at once, 47-56 with
    // two; with one, a single node's herd waited on its round trips).
    writer_ = std::make_unique<GroupWriter>(
        options.writer_threads,
        GroupWriter::Limits{
            .max_writes = 64, .max_ids = 5000, .max_fenced_groups = 2},
        [this](std::vector<QueuedWrite>& group) { WriteGroup(group); });
  }
  ~PostgresTimerStore() override { Close(); }

  void Submit(std::vector<std::string> ids, Mutation mutation, Done done,
              WriteOptions options) override {
    writer_->Submit({std::move(ids), std::move(mutation), std::move(done), options});
  }

  void SubmitAll(std::vector<Write> writes) override { writer_->SubmitAll(std::move(writes)); }

  Result<std::optional<TimerRecord>> Get(const std::string& id) const override {
    return WithConnection(pool_, [&](PgConnection& c) -> Result<std::optional<TimerRecord>> {
      Result<PgResult> r = c.ExecBinary("SELECT record FROM tickwheel_timers WHERE id = $1", {id});
      if (!r.ok()) return r.status();
      if (r->rows() == 0) return std::optional<TimerRecord>();
      return DecodeRow(id, std::string(r->Text(0, 0)));
    });
  }

  Result<DueScan> ScanDue(const std::vector<int>& shards, const DueEntry& from,
                          std::int64_t to_ms, std::size_t limit,
                          const FlowSet* skip) const override {
    std::vector<std::int64_t> list(shards.begin(), shards.end());
    std::vector<std::string> skipped;
    if (skip != nullptr) skipped.assign(skip->begin(), skip->end());
    const std::size_t look_at = std::min<std::size_t>(limit + kSkipBudget, INT32_MAX);
    const std::string shard_list = PgBigintArray(list);
    const std::string from_ms = std::to_string(std::max<std::int64_t>(from.due_ms, INT64_MIN + 1));
    if (skipped.empty()) {  // nothing to skip: the plain scan
      return WithConnection(pool_, [&](PgConnection& c) -> Result<DueScan> {
        Result<PgResult> r = c.Exec(
            "SELECT due_ms, id, coalesce(flow, '') FROM tickwheel_timers WHERE state IN (0, 1) "
            "AND shard = ANY($1::int[]) AND (due_ms, id) >= ($2, $3) AND due_ms < $4 "
            "ORDER BY due_ms, id LIMIT $5",
            {shard_list, from_ms, from.id, std::to_string(to_ms),
             std::to_string(std::min<std::size_t>(limit, INT32_MAX))});
        if (!r.ok()) return r.status();
        DueScan out;
        out.entries.reserve(static_cast<std::size_t>(r->rows()));
        for (int i = 0; i < r->rows(); ++i) {
          out.entries.push_back({r->Int(i, 0), std::string(r->Text(i, 1)), std::string(r->Text(i, 2))});
        }
        return out;
      });
    }
    return WithConnection(pool_, [&](PgConnection& c) -> Result<DueScan> {
      // The entries returned (kind 0, at most `limit`), then the last one
      // looked at (kind 1) when the scan looked at all it may: the caller
      // goes on from there. Rows of a node before flows have none (NULL):
      // the flow "" (BackfillFlows gives them theirs at the next open).
      Result<PgResult> r = c.Exec(
          "WITH s AS MATERIALIZED (SELECT due_ms, id, coalesce(flow, '') AS flow "
          "FROM tickwheel_timers WHERE state IN (0, 1) "
          "AND shard = ANY($1::int[]) AND (due_ms, id) >= ($2, $3) AND due_ms < $4 "
          "ORDER BY due_ms, id LIMIT $5) "
          "(SELECT due_ms, id, flow, 0 FROM s WHERE flow <> ALL($6::text[]) "
          "ORDER BY due_ms, id LIMIT $7) "
          "UNION ALL (SELECT due_ms, id, flow, 1 FROM s WHERE (SELECT count(*) FROM s) = $5 "
          "ORDER BY due_ms DESC, id DESC LIMIT 1)",
          {shard_list, from_ms, from.id, std::to_string(to_ms), std::to_string(look_at),
           PgTextArray(skipped), std::to_string(std::min<std::size_t>(limit, INT32_MAX))});
      if (!r.ok()) return r.status();
      DueScan out;
      out.entries.reserve(static_cast<std::size_t>(r->rows()));
      std::optional<DueEntry> last_looked;
      for (int i = 0; i < r->rows(); ++i) {
        DueEntry e{r->Int(i, 0), std::string(r->Text(i, 1)), std::string(r->Text(i, 2))};
        if (r->Int(i, 3) == 0) {
          out.entries.push_back(std::move(e));
        } else {
          last_looked = std::move(e);
        }
      }
      std::sort(out.entries.begin(), out.entries.end());
      // Stopped at its budget before `limit` entries: go on after the last
      // entry it looked at.
      if (last_looked && out.entries.size() < limit) {
        out.resume = DueEntry{last_looked->due_ms, last_looked->id + '\x01', ""};
      }
      return out;
    });
  }

  Result<DueScan> ScanFlowDue(const std::string& flow, const std::vector<int>& shards,
                              const DueEntry& from, std::int64_t to_ms,
                              std::size_t limit) const override {
    std::vector<std::int64_t> list(shards.begin(), shards.end());
    return WithConnection(pool_, [&](PgConnection& c) -> Result<DueScan> {
      Result<PgResult> r = c.Exec(
          "SELECT due_ms, id FROM tickwheel_timers WHERE flow = $1 AND state IN (0, 1) "
          "AND shard = ANY($2::int[]) AND (due_ms, id) >= ($3, $4) AND due_ms < $5 "
          "ORDER BY due_ms, id LIMIT $6",
          {flow, PgBigintArray(list),
           std::to_string(std::max<std::int64_t>(from.due_ms, INT64_MIN + 1)), from.id,
           std::to_string(to_ms), std::to_string(std::min<std::size_t>(limit, INT32_MAX))});
      if (!r.ok()) return r.status();
      DueScan out;
      out.entries.reserve(static_cast<std::size_t>(r->rows()));
      for (int i = 0; i < r->rows(); ++i) {
        out.entries.push_back({r->Int(i, 0), std::string(r->Text(i, 1)), flow});
      }
      return out;
    });
  }

  Result<FlowCount> CountFlowDue(const std::string& flow, std::int64_t before_ms,
                                 std::size_t cap, const std::vector<int>* shards) const override {
    std::vector<std::int64_t> list;
    if (shards) list.assign(shards->begin(), shards->end());
    return WithConnection(pool_, [&](PgConnection& c) -> Result<FlowCount> {
      Result<PgResult> r = c.Exec(
          "SELECT count(*) FROM (SELECT 1 FROM tickwheel_timers WHERE flow = $1 "
          "AND state IN (0, 1) AND due_ms < $2 AND ($4 OR shard = ANY($5::int[])) LIMIT $3) s",
          {flow, std::to_string(before_ms), std::to_string(std::min<std::size_t>(cap, INT32_MAX)),
           shards ? "false" : "true", PgBigintArray(list)});
      if (!r.ok()) return r.status();
      FlowCount out;
      out.count = r->Int(0, 0);
      out.at_least = out.count >= static_cast<std::int64_t>(cap);
      return out;
    });
  }

  Result<std::optional<std::string>> UpdateFlowSettings(
      const std::string& flow, const FlowSettingsChange& change) override {
    using Out = Result<std::optional<std::string>>;
    return WithConnection(pool_, [&](PgConnection& c) -> Out {
      for (int attempt = 0;; ++attempt) {
        // The row is locked for the change (FOR UPDATE); a flow without one
        // gets an empty one first (not seen by others unless it commits),
        // so two nodes changing a new flow take turns too.
        Status s = c.Begin();
        if (s.ok()) {
          s = c.Exec("INSERT INTO tickwheel_flows (flow, settings) VALUES ($1, '') "
                     "ON CONFLICT (flow) DO NOTHING",
                     {flow})
                  .status();
        }
        Result<PgResult> row = s.ok() ? c.Exec("SELECT settings FROM tickwheel_flows "
                                               "WHERE flow = $1 FOR UPDATE",
                                               {flow})
                                      : Result<PgResult>(s);
        auto fail = [&](Status status) -> Out {
          c.Rollback();
          return status;
        };
        if (!row.ok()) return fail(row.status());
        std::optional<std::string> stored;
        if (row->rows() > 0 && !row->Text(0, 0).empty()) stored = std::string(row->Text(0, 0));
        Out next = change(stored);
        if (!next.ok()) return fail(next.status());
        Status written =
            *next ? c.Exec("INSERT INTO tickwheel_flows (flow, settings) VALUES ($1, $2) "
                           "ON CONFLICT (flow) DO UPDATE SET settings = excluded.settings",
                           {flow, **next})
                        .status()
                  : c.Exec("DELETE FROM tickwheel_flows WHERE flow = $1", {flow}).status();
        // Every node hears of it when it commits (NotificationListener).
        if (written.ok()) {
          written = c.Exec("SELECT pg_notify('" + std::string(kFlowsChannel) + "', $1)", {flow})
                        .status();
        }
        if (written.ok()) written = c.Commit();
        if (written.ok()) return next;
        c.Rollback();
        // Two nodes inserting a new flow at once: the loser runs again and
        // sees the winner's row.
        if (written.code() != StatusCode::kConflict || attempt == 3) return written;
      }
    });
  }

  Result<std::vector<std::pair<std::string, std::string>>> ListFlowSettings() const override {
    using Out = std::vector<std::pair<std::string, std::string>>;
    return WithConnection(pool_, [&](PgConnection& c) -> Result<Out> {
      Result<PgResult> r =
          c.Exec("SELECT flow, settings FROM tickwheel_flows WHERE settings <> '' ORDER BY flow");
      if (!r.ok()) return r.status();
      Out out;
      for (int i = 0; i < r->rows(); ++i) out.emplace_back(r->Text(i, 0), r->Text(i, 1));
      return out;
    });
  }

  // Two steps, each bounded: the keys of the rows looked at (at most the
  // scan budget, filtered in SQL by id prefix and host; no record), then
  // the records of the rows that go on the page, fetched in chunks of at
  // most kFetchBytes until the page is full. Rows written before the host
  // column existed (host NULL) pass the SQL filter and are checked on
  // their decoded record.
  Result<ListPage> List(TimerState state, const std::optional<ListCursor>& after,
                        std::size_t limit, std::size_t max_bytes,
                        const ListFilter& filter) const override {
    const bool scheduled = IsScheduled(state);
    const std::string time = scheduled ? "due_ms" : "updated_ms";
    const std::size_t scan = filter.empty() ? std::min(limit, kListScanBudget) : kListScanBudget;
    return WithConnection(pool_, [&](PgConnection& c) -> Result<ListPage> {
      // Kind 0: a row that matches (id, time, host unknown, record bytes);
      // 1: the last row looked at; 2: how many were looked at.
      Result<PgResult> keys = c.Exec(
          "WITH s AS MATERIALIZED (SELECT id, " + time +
              " AS t, host, octet_length(record) AS n FROM tickwheel_timers WHERE state = $1 "
              "AND (" + time + ", id) > ($2, $3) ORDER BY " + time + ", id LIMIT $4), "
              "m AS (SELECT id, t, host IS NULL AS unknown, n FROM s WHERE starts_with(id, $5) "
              "AND ($6 = '' OR host = $6 OR host IS NULL) ORDER BY t, id LIMIT $7) "
              "SELECT 0 AS k, id, t, unknown::int, n FROM m "
              "UNION ALL (SELECT 1, id, t, 0, 0 FROM s ORDER BY t DESC, id DESC LIMIT 1) "
              "UNION ALL SELECT 2, '', count(*), 0, 0 FROM s ORDER BY 1, 3, 2",
          {std::to_string(static_cast<int>(state)),
           std::to_string(after ? after->time_ms : INT64_MIN + 1), after ? after->id : "",
           std::to_string(scan), filter.id_prefix, filter.host, std::to_string(limit)});
      if (!keys.ok()) return keys.status();
      struct Key {
        std::string id;
        std::int64_t t;
        std::int64_t bytes;
      };
      std::vector<Key> matched;
      std::optional<ListCursor> last_looked_at;
      std::size_t looked_at = 0;
      for (int i = 0; i < keys->rows(); ++i) {
        const std::int64_t kind = keys->Int(i, 0);
        if (kind == 0) {
          matched.push_back({std::string(keys->Text(i, 1)), keys->Int(i, 2), keys->Int(i, 4)});
        } else if (kind == 1) {
          last_looked_at = ListCursor{keys->Int(i, 2), std::string(keys->Text(i, 1))};
        } else {
          looked_at = static_cast<std::size_t>(keys->Int(i, 2));
        }
      }
      ListPage page;
      std::size_t bytes = 0;
      std::size_t next = 0;  // matched rows handled
      bool full = false;
      while (next < matched.size() && !full) {
        // A chunk: what fits in kFetchBytes (one row at least).
        std::vector<std::string> ids;
        std::int64_t chunk_bytes = 0;
        std::size_t end = next;
        // Rows the page may still take, and records up to kFetchBytes and
        // what the page has room for (one row at least).
        while (end < matched.size() && page.records.size() + ids.size() < limit &&
               (ids.empty() || (chunk_bytes + matched[end].bytes <= kFetchBytes &&
                                bytes + static_cast<std::size_t>(chunk_bytes) < max_bytes))) {
          chunk_bytes += matched[end].bytes;
          ids.push_back(matched[end].id);
          ++end;
        }
        Result<PgResult> rows = c.ExecBinary(
            "SELECT id, record FROM tickwheel_timers WHERE id = ANY($1::text[])", {PgTextArray(ids)});
        if (!rows.ok()) return rows.status();
        std::map<std::string_view, std::string_view> fetched;
        for (int i = 0; i < rows->rows(); ++i) fetched.emplace(rows->Text(i, 0), rows->Text(i, 1));
        for (; next < end; ++next) {
          const Key& key = matched[next];
          page.next = ListCursor{key.t, key.id};
          auto it = fetched.find(key.id);
          if (it == fetched.end()) continue;  // deleted meanwhile
          Result<std::optional<TimerRecord>> record = DecodeRow(key.id, std::string(it->second));
          if (!record.ok()) return record.status();
          TimerRecord& r = **record;
          // Changed meanwhile (another state or time), or a row written
          // before the host column whose host does not match.
          const std::int64_t t = scheduled ? r.due_ms : r.updated_ms;
          if (r.state != state || t != key.t || !filter.Matches(r)) continue;
          bytes += 256 + r.payload.size() + r.target.size();
          page.records.push_back(std::move(r));
          if (page.records.size() >= limit || bytes >= max_bytes) {
            full = true;
            ++next;
            break;
          }
        }
      }
      // More after this page: rows matched but not handled, or the scan
      // stopped at its budget (then the page ends where the scan did).
      // (m stopped at `limit` rows: more may match after them.)
      if (next < matched.size() || matched.size() >= limit) return page;
      if (looked_at == scan && last_looked_at) {
        page.next = last_looked_at;
        return page;
      }
      page.next.reset();
      return page;
    });
  }
  // A chunk of a listing's records holds about this many bytes at most.
  static constexpr std::int64_t kFetchBytes = 4 << 20;

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
      Result<PgResult> r = c.Exec("SELECT pg_total_relation_size('tickwheel_timers') + "
                                  "pg_total_relation_size('tickwheel_schedules')");
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
                                      ", instance, clock_offset_ms FROM tickwheel_nodes ORDER BY node_id");
      if (!nodes.ok()) return nodes.status();
      Result<PgResult> leases = c.Exec("SELECT shard, coalesce(owner, ''), epoch, " +
                                       ms("expires_at") + ", " + ms("now()") +
                                       " FROM tickwheel_shard_leases ORDER BY shard");
      if (!leases.ok()) return leases.status();
      ClusterState out;
      for (int i = 0; i < nodes->rows(); ++i) {
        ClusterNode node{std::string(nodes->Text(i, 0)), std::string(nodes->Text(i, 4)),
                         nodes->Int(i, 1), nodes->Int(i, 2), std::nullopt};
        if (!nodes->IsNull(i, 5)) node.clock_offset_ms = nodes->Int(i, 5);
        out.nodes.push_back(std::move(node));
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

  Result<std::optional<ScheduleRow>> GetSchedule(const std::string& id) const override {
    return WithConnection(pool_, [&](PgConnection& c) -> Result<std::optional<ScheduleRow>> {
      Result<PgResult> r =
          c.Exec("SELECT state, record FROM tickwheel_schedules WHERE id = $1", {id});
      if (!r.ok()) return r.status();
      if (r->rows() == 0) return std::optional<ScheduleRow>();
      return DecodeScheduleRow(id, r->Int(0, 0), r->Bytes(0, 1));
    });
  }

  // Two steps, as List: the ids and record sizes of the rows looked at
  // (at most the scan budget; no record), then the records of the rows
  // that go on the page, in binary form (no hex text twice their size).
  Result<SchedulePage> ListSchedules(std::optional<std::uint8_t> state, const std::string& after,
                                     std::size_t limit, std::size_t max_bytes,
                                     const std::string& prefix) const override {
    // Ids are ASCII: every id with `prefix` sorts below prefix + DEL.
    const std::size_t n = std::min(limit, kListScanBudget);
    return WithConnection(pool_, [&](PgConnection& c) -> Result<SchedulePage> {
      Result<PgResult> keys = c.Exec(
          "SELECT id, octet_length(record) FROM tickwheel_schedules WHERE ($1::smallint IS NULL OR "
          "state = $1::smallint) AND id > $2 AND id >= $3 AND id < $4 ORDER BY id LIMIT $5",
          {state ? std::optional<std::string>(std::to_string(*state)) : std::nullopt, after,
           prefix, prefix + '\x7f', std::to_string(n)});
      if (!keys.ok()) return keys.status();
      // The rows that go on the page: up to max_bytes of records (one at least).
      std::vector<std::string> ids;
      std::int64_t bytes = 0;
      for (int i = 0; i < keys->rows() && (ids.empty() || bytes < static_cast<std::int64_t>(max_bytes));
           ++i) {
        ids.emplace_back(keys->Text(i, 0));
        bytes += keys->Int(i, 1);
      }
      SchedulePage page;
      if (!ids.empty()) {
        Result<PgResult> rows = c.ExecBinary(
            "SELECT id, state::text, record FROM tickwheel_schedules WHERE id = ANY($1::text[])",
            {PgTextArray(ids)});
        if (!rows.ok()) return rows.status();
        std::map<std::string_view, int> fetched;  // id -> its row
        for (int i = 0; i < rows->rows(); ++i) fetched.emplace(rows->Text(i, 0), i);
        for (const std::string& id : ids) {
          auto it = fetched.find(id);
          if (it == fetched.end()) continue;  // deleted meanwhile
          const std::int64_t row_state = std::stoll(std::string(rows->Text(it->second, 1)));
          if (state && row_state != *state) continue;  // changed meanwhile
          Result<std::optional<ScheduleRow>> row =
              DecodeScheduleRow(id, row_state, std::string(rows->Text(it->second, 2)));
          if (!row.ok()) return row.status();
          page.rows.push_back(std::move(**row));
        }
      }
      // More after this page: rows looked at but not on it, or as many
      // looked at as the query could return.
      if (ids.size() < static_cast<std::size_t>(keys->rows()) ||
          (static_cast<std::size_t>(keys->rows()) == n && n > 0)) {
        page.next = ids.back();
      }
      return page;
    });
  }

  ScheduleCounts CountSchedules() const override {
    ScheduleCounts out;
    for (int i = 0; i < kScheduleStates; ++i) out[i] = schedule_counts_[i].load();
    return out;
  }

  Result<std::vector<TimerRecord>> LastWithPrefix(const std::string& prefix,
                                                  const std::string& before,
                                                  std::size_t limit) const override {
    return WithConnection(pool_, [&](PgConnection& c) -> Result<std::vector<TimerRecord>> {
      Result<PgResult> r = c.Exec(
          "SELECT id, record FROM tickwheel_timers WHERE id >= $1 AND id < $2 "
          "ORDER BY id DESC LIMIT $3",
          {prefix, before.empty() ? prefix + '\x7f' : before, std::to_string(limit)});
      if (!r.ok()) return r.status();
      std::vector<TimerRecord> out;
      for (int i = 0; i < r->rows(); ++i) {
        Result<std::optional<TimerRecord>> record =
            DecodeRow(std::string(r->Text(i, 0)), r->Bytes(i, 1));
        if (!record.ok()) return record.status();
        out.push_back(std::move(**record));
      }
      return out;
    });
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
      Result<PgResult> r = c.Exec(kCountsQuery);
      if (!r.ok()) return r.status();
      for (int i = 0; i < r->rows(); ++i) {
        const std::int64_t state = r->Int(i, 0);
        if (state >= 0 && state < kNumStates) counts_[state].store(r->Int(i, 1));
        const std::int64_t schedule_state = state - kScheduleCountBase;
        if (schedule_state >= 0 && schedule_state < kScheduleStates) {
          schedule_counts_[schedule_state].store(r->Int(i, 1));
        }
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
      for (const DueChange& c : DueChanges(changes)) listener_(c.id, c.due_ms, c.flow);
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
      if (w.options.fenced || std::any_of(w.ids.begin(), w.ids.end(), IsScheduleKeyOf)) {
        return false;
      }
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
            "SELECT * FROM unnest($9::smallint[], $10::bigint[])), "
            "n AS MATERIALIZED (SELECT pg_notify('" + std::string(kDueChannel) +
            "', p) FROM unnest($11::text[]) p) SELECT count(*) FROM n",
        params);
    if (!r.ok()) {
      if (r.status().code() == StatusCode::kConflict) return false;
      return r.status();
    }
    for (int i = 0; i < kNumStates; ++i) counts_[i].fetch_add(delta[i]);
    return true;
  }

  static bool IsScheduleKeyOf(const std::string& id) { return IsScheduleKey(id); }

  // The count deltas' parameters (states, deltas) for
  // `INSERT INTO tickwheel_count_deltas ... unnest($n::smallint[], $n+1::bigint[])`;
  // schedules' states from kScheduleCountBase.
  static void AppendCountDeltas(const StateCounts& delta, PgParams& params,
                                const ScheduleCounts& schedule_delta = {}) {
    std::vector<std::int64_t> states, deltas;
    for (int i = 0; i < kNumStates; ++i) {
      if (delta[i] == 0) continue;
      states.push_back(i);
      deltas.push_back(delta[i]);
    }
    for (int i = 0; i < kScheduleStates; ++i) {
      if (schedule_delta[i] == 0) continue;
      states.push_back(kScheduleCountBase + i);
      deltas.push_back(schedule_delta[i]);
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
      if (cancelled) {
        notices.push_back(
            {ShardOf(change.after->id), std::nullopt, change.after->id, change.after->flow});
      }
      if (due_soon) {
        notices.push_back(
            {ShardOf(change.after->id), change.after->due_ms, change.after->id, change.after->flow});
      }
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
    // Schedules first, then timers (and, later, a schedule's occurrences):
    // every transaction locks in that order, so none waits in a cycle.
    std::vector<std::string> timer_ids, schedule_ids;
    for (const std::string& id : ids) {
      if (IsScheduleKey(id)) {
        schedule_ids.push_back(id.substr(0, id.size() - 1));
      } else {
        timer_ids.push_back(id);
      }
    }
    std::map<std::string, std::pair<std::int64_t, std::string>> schedules;
    if (!schedule_ids.empty()) {
      Result<PgResult> r = c.Exec(
          "SELECT id, state, record FROM tickwheel_schedules WHERE id = ANY($1::text[]) "
          "ORDER BY id FOR UPDATE",
          {PgTextArray(schedule_ids)});
      if (!r.ok()) return fail(r.status());
      for (int i = 0; i < r->rows(); ++i) {
        schedules.emplace(r->Text(i, 0), std::make_pair(r->Int(i, 1), r->Bytes(i, 2)));
      }
    }
    Result<std::map<std::string, std::string>> stored = LockTimers(c, timer_ids);
    if (!stored.ok()) return fail(stored.status());
    PgTxn txn(c, timer_ids, std::move(*stored), std::move(schedules));
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
    if (!txn.failed().ok()) return fail(txn.failed());
    changes = txn.Changes();
    const std::vector<ScheduleChange> schedule_changes = txn.ScheduleChanges();
    if (changes.empty() && schedule_changes.empty()) return c.Commit();
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
                             "due_ms = v.due_ms, updated_ms = v.updated_ms, flow = v.flow, "
                             "record = v.record, host = v.host FROM ") +
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
    s = WriteSchedules(c, schedule_changes);
    if (!s.ok()) return fail(s);
    const StateCounts delta = CountDelta(changes);
    const ScheduleCounts schedule_delta = CountDelta(schedule_changes);
    if (std::any_of(delta.begin(), delta.end(), [](std::int64_t d) { return d != 0; }) ||
        std::any_of(schedule_delta.begin(), schedule_delta.end(),
                    [](std::int64_t d) { return d != 0; })) {
      PgParams params;
      AppendCountDeltas(delta, params, schedule_delta);
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
    for (int i = 0; i < kScheduleStates; ++i) schedule_counts_[i].fetch_add(schedule_delta[i]);
    return Status::Ok();
  }

  // The schedules' net changes: one INSERT, UPDATE and DELETE of many rows.
  Status WriteSchedules(PgConnection& c, const std::vector<ScheduleChange>& changes) {
    ScheduleRows inserts, updates;
    std::vector<std::string> deletes;
    for (const ScheduleChange& change : changes) {
      const std::string& id = change.after ? change.after->id : change.before->id;
      if (!change.after) {
        deletes.push_back(id);
      } else if (change.before) {
        updates.Add(*change.after, ShardOf(id));
      } else {
        inserts.Add(*change.after, ShardOf(id));
      }
    }
    if (!inserts.empty()) {
      Status s = c.Exec(std::string("INSERT INTO tickwheel_schedules (id, shard, state, record) "
                                    "SELECT * FROM ") + kScheduleUnnest,
                        inserts.Params())
                     .status();
      if (!s.ok()) return s;
    }
    if (!updates.empty()) {
      Status s = c.Exec(std::string("UPDATE tickwheel_schedules t SET state = v.state, "
                                    "record = v.record FROM ") +
                            kScheduleUnnest + " AS v(id, shard, state, record) WHERE t.id = v.id",
                        updates.Params())
                     .status();
      if (!s.ok()) return s;
    }
    if (!deletes.empty()) {
      Status s = c.Exec("DELETE FROM tickwheel_schedules WHERE id = ANY($1::text[])",
                        {PgTextArray(deletes)})
                     .status();
      if (!s.ok()) return s;
    }
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
  std::array<std::atomic<std::int64_t>, kScheduleStates> schedule_counts_{};
  std::atomic<std::uint64_t> write_errors_{0};
  std::atomic<std::uint64_t> retries_{0};
  std::atomic<bool> closed_{false};
  std::uint64_t refreshes_ = 0;  // by the counts thread (and the constructor)
  std::unique_ptr<internal::PeriodicThread> counts_thread_;
  std::unique_ptr<GroupWriter> writer_;
};

}  // namespace

namespace {

// Scheduled timers written before flows (or by a node of an older version)
// have no flow: each gets DefaultFlowKey of its target, from its record.
Status BackfillFlows(PgConnection& c) {
  for (;;) {
    Result<PgResult> rows = c.Exec(
        "SELECT id, record FROM tickwheel_timers WHERE flow IS NULL AND state IN (0, 1) "
        "LIMIT 5000");
    if (!rows.ok()) return rows.status();
    if (rows->rows() == 0) return Status::Ok();
    std::vector<std::string> ids, flows;
    for (int i = 0; i < rows->rows(); ++i) {
      ids.emplace_back(rows->Text(i, 0));
      Result<TimerRecord> r = DecodeRecord(ids.back(), rows->Bytes(i, 1));
      flows.push_back(r.ok() ? r->flow : "invalid");
    }
    Status s = c.Exec("UPDATE tickwheel_timers t SET flow = v.flow "
                      "FROM unnest($1::text[], $2::text[]) AS v(id, flow) "
                      "WHERE t.id = v.id AND t.flow IS NULL",
                      {PgTextArray(ids), PgTextArray(flows)})
                   .status();
    if (!s.ok()) return s;
  }
}

}  // namespace

Result<std::unique_ptr<TimerStore>> OpenPostgresTimerStore(const StoreOptions& options) {
  Result<std::unique_ptr<PgConnection>> conn = PgConnection::Connect(options.postgres);
  if (!conn.ok()) return conn.status();
  Result<int> shards = MigrateSchema(**conn, options.shards);
  if (!shards.ok()) return shards.status();
  if (Status s = BackfillFlows(**conn); !s.ok()) {
    return Status::Unavailable("giving the timers of before flows theirs failed: " + s.message());
  }
  return std::unique_ptr<TimerStore>(new PostgresTimerStore(options, *shards));
}

}  // namespace tickwheel::server
