// SPDX-License-Identifier: Apache-2.0
// PostgresTimerStore (store/pg_store.h): construction, reads, listings,
// counts, flow settings, metrics and Close; and OpenPostgresTimerStore.
// The write path is in pg_write_path.cc.
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
#include "store/pg_store.h"
#include "store/postgres_schema.h"
#include "store/record_codec.h"
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

PostgresTimerStore::PostgresTimerStore(const StoreOptions& options, int shards)
    : options_(options), shards_(shards), pool_(options.postgres) {
  RefreshCounts();
  counts_thread_ = std::make_unique<internal::PeriodicThread>(
      SystemClock::Instance(), std::chrono::seconds(1), [this] { RefreshCounts(); });
  // A node's claims and outcomes go on two transactions at most, so that
  // a herd's gather (measured: 7 deliveries per transaction when they went
  // on 8 at once, 47-56 with two; with one, a single node's herd waited on
  // its round trips). Its creates and other client writes on two at most
  // too, beside them, so that they gather (docs/performance.md, "Cluster":
  // three nodes' single creates 1.18x the peer against 0.99x on four,
  // median of ten interleaved rounds).
  writer_ = std::make_unique<GroupWriter>(
      options.writer_threads,
      GroupWriter::Limits{.max_writes = 64,
                          .max_ids = 5000,
                          .max_fenced_groups = 2,
                          .max_unfenced_groups = 2},
      [this](std::vector<QueuedWrite>& group) { WriteGroup(group); });
}
PostgresTimerStore::~PostgresTimerStore() { Close(); }

Result<std::optional<TimerRecord>> PostgresTimerStore::Get(const std::string& id) const {
  return WithConnection(pool_, [&](PgConnection& c) -> Result<std::optional<TimerRecord>> {
    Result<PgResult> r = c.ExecBinary("SELECT record FROM tickwheel_timers WHERE id = $1", {id});
    if (!r.ok()) return r.status();
    if (r->rows() == 0) return std::optional<TimerRecord>();
    return DecodeRow(id, std::string(r->Text(0, 0)));
  });
}

Result<DueScan> PostgresTimerStore::ScanDue(const std::vector<int>& shards, const DueEntry& from,
                                            std::int64_t to_ms, std::size_t limit,
                                            const FlowSet* skip) const {
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

Result<DueScan> PostgresTimerStore::ScanFlowDue(const std::string& flow,
                                                const std::vector<int>& shards,
                                                const DueEntry& from, std::int64_t to_ms,
                                                std::size_t limit) const {
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

Result<TimerStore::FlowCount> PostgresTimerStore::CountFlowDue(
    const std::string& flow, std::int64_t before_ms, std::size_t cap,
    const std::vector<int>* shards) const {
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

Result<std::optional<std::string>> PostgresTimerStore::UpdateFlowSettings(
    const std::string& flow, const FlowSettingsChange& change) {
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

Result<std::vector<std::pair<std::string, std::string>>> PostgresTimerStore::ListFlowSettings()
    const {
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

Result<ListPage> PostgresTimerStore::List(TimerState state, const std::optional<ListCursor>& after,
                                          std::size_t limit, std::size_t max_bytes,
                                          const ListFilter& filter) const {
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

Result<std::vector<std::int64_t>> PostgresTimerStore::CountDue(
    const std::vector<std::int64_t>& before_ms, std::size_t cap) const {
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

Result<std::uint64_t> PostgresTimerStore::ApproximateBytes() const {
  return WithConnection(pool_, [&](PgConnection& c) -> Result<std::uint64_t> {
    Result<PgResult> r = c.Exec("SELECT pg_total_relation_size('tickwheel_timers') + "
                                "pg_total_relation_size('tickwheel_schedules')");
    if (!r.ok()) return r.status();
    return static_cast<std::uint64_t>(r->Int(0, 0));
  });
}

Result<std::optional<ClusterState>> PostgresTimerStore::Cluster() const {
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

Result<std::vector<std::string>> PostgresTimerStore::FinishedBefore(TimerState state,
                                                                    std::int64_t before_ms,
                                                                    std::size_t limit) const {
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

StateCounts PostgresTimerStore::Counts() const {
  StateCounts out;
  for (int i = 0; i < kNumStates; ++i) out[i] = counts_[i].load();
  return out;
}

Result<std::unique_ptr<StoreSnapshot>> PostgresTimerStore::Snapshot() const {
  return PgSnapshot::Take(options_.postgres);
}

Status PostgresTimerStore::Checkpoint(const std::string&) {
  return Status::Invalid(
      "backup_unsupported",
      "this node's store is PostgreSQL: back it up with pg_dump or pg_basebackup "
      "(docs/operations.md, Backup); tickwheel backup copies the embedded store");
}

Result<std::optional<ScheduleRow>> PostgresTimerStore::GetSchedule(const std::string& id) const {
  return WithConnection(pool_, [&](PgConnection& c) -> Result<std::optional<ScheduleRow>> {
    Result<PgResult> r =
        c.Exec("SELECT state, record, plan FROM tickwheel_schedules WHERE id = $1", {id});
    if (!r.ok()) return r.status();
    if (r->rows() == 0) return std::optional<ScheduleRow>();
    return DecodeScheduleRow(id, r->Int(0, 0), r->Bytes(0, 1), r->Bytes(0, 2));
  });
}

Result<SchedulePage> PostgresTimerStore::ListSchedules(std::optional<std::uint8_t> state,
                                                       const std::string& after, std::size_t limit,
                                                       std::size_t max_bytes,
                                                       const std::string& prefix) const {
  // Ids are ASCII: every id with `prefix` sorts below prefix + DEL.
  const std::size_t n = std::min(limit, kListScanBudget);
  return WithConnection(pool_, [&](PgConnection& c) -> Result<SchedulePage> {
    Result<PgResult> keys = c.Exec(
        "SELECT id, octet_length(record) + octet_length(plan) FROM tickwheel_schedules WHERE "
        "($1::smallint IS NULL OR "
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
          "SELECT id, state::text, record, plan FROM tickwheel_schedules WHERE id = ANY($1::text[])",
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
            DecodeScheduleRow(id, row_state, std::string(rows->Text(it->second, 2)),
                              std::string(rows->Text(it->second, 3)));
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

ScheduleCounts PostgresTimerStore::CountSchedules() const {
  ScheduleCounts out;
  for (int i = 0; i < kScheduleStates; ++i) out[i] = schedule_counts_[i].load();
  return out;
}

Result<std::vector<TimerRecord>> PostgresTimerStore::LastWithPrefix(const std::string& prefix,
                                                                    const std::string& before,
                                                                    std::size_t limit) const {
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

void PostgresTimerStore::SetDueListener(DueListener listener) { listener_ = std::move(listener); }

void PostgresTimerStore::AppendMetrics(std::string& out) const {
  out += "# HELP tickwheel_store_write_errors_total Store transactions that failed.\n"
         "# TYPE tickwheel_store_write_errors_total counter\ntickwheel_store_write_errors_total " +
         std::to_string(write_errors_.load()) +
         "\n# HELP tickwheel_store_transaction_retries_total Transactions run again after a "
         "conflict with another node's.\n"
         "# TYPE tickwheel_store_transaction_retries_total counter\n"
         "tickwheel_store_transaction_retries_total " +
         std::to_string(retries_.load()) + "\n";
}

void PostgresTimerStore::Close() {
  if (closed_.exchange(true)) return;
  writer_->Close();
  counts_thread_.reset();
  pool_.Clear();
}

void PostgresTimerStore::RefreshCounts() {
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
