// SPDX-License-Identifier: Apache-2.0
// PostgresTimerStore's write path (store/pg_store.h; what it writes, and
// when, is in store/postgres_timer_store.h): from Submit to the commit of a
// group's transaction, or of its insert-only statement, with the lease
// check of fenced writes and the announcements of the changes.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <set>

#include "store/group_writer.h"
#include "store/overlay_txn.h"
#include "store/pg_connection.h"
#include "store/pg_pool.h"
#include "store/pg_rows.h"
#include "store/pg_store.h"
#include "store/pg_txn.h"
#include "store/postgres_timer_store.h"
#include "store/shard_fence.h"

namespace tickwheel::server {

void PostgresTimerStore::Submit(std::vector<std::string> ids, Mutation mutation, Done done,
                                WriteOptions options) {
  writer_->Submit({std::move(ids), std::move(mutation), std::move(done), options});
}

void PostgresTimerStore::SubmitAll(std::vector<Write> writes) {
  writer_->SubmitAll(std::move(writes));
}

void PostgresTimerStore::WriteGroup(std::vector<QueuedWrite>& group) {
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

Result<std::set<int>> PostgresTimerStore::ValidLeases(PgConnection& c,
                                                      const std::set<int>& shards) {
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

Result<bool> PostgresTimerStore::TryInsertOnly(PgConnection& c, std::vector<QueuedWrite>& group,
                                               std::vector<Status>& results,
                                               std::vector<RecordChange>& changes) {
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
  changes = txn.TakeChanges();
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
  std::string notices = PgTextArray(EncodeDuePayloads(options_.node_id, Notices(changes)));
  Status written = Status::Ok();
  if (rows.size() >= kPgCopyRows) {
    written = CopyInsertOnly(c, inserts, delta, std::move(notices));
  } else {
    PgParams params = inserts.Params();
    AppendCountDeltas(delta, params);
    params.push_back(std::move(notices));
    written = c.Exec(std::string("WITH t AS (INSERT INTO tickwheel_timers (") + kTimerColumns +
                         ") SELECT * FROM " + kUnnestRows + "), " + DeltasAndNotices(9),
                     params)
                  .status();
  }
  if (!written.ok()) {
    if (written.code() == StatusCode::kConflict) return false;
    return written;
  }
  for (int i = 0; i < kNumStates; ++i) counts_[i].fetch_add(delta[i]);
  return true;
}

Status PostgresTimerStore::CopyInsertOnly(PgConnection& c, const Rows& inserts,
                                          const StateCounts& delta, std::string notices) {
  Status s = c.ExecScript("BEGIN");  // synchronous_commit stays on: durable
  if (!s.ok()) return s;
  s = c.CopyIn(std::string("COPY tickwheel_timers (") + kTimerColumns +
                   ") FROM STDIN (FORMAT binary)",
               inserts.CopyData());
  if (s.ok()) {
    PgParams params;
    AppendCountDeltas(delta, params);
    params.push_back(std::move(notices));
    s = c.Exec("WITH " + DeltasAndNotices(1), params).status();
  }
  if (s.ok()) s = c.Commit();
  if (!s.ok()) c.Rollback();
  return s;
}

std::string PostgresTimerStore::DeltasAndNotices(int first) {
  const std::string n = std::to_string(first);
  const std::string n1 = std::to_string(first + 1);
  const std::string n2 = std::to_string(first + 2);
  return "d AS (INSERT INTO tickwheel_count_deltas (state, delta) SELECT * FROM unnest($" + n +
         "::smallint[], $" + n1 + "::bigint[])), n AS MATERIALIZED (SELECT pg_notify('" +
         std::string(kDueChannel) + "', p) FROM unnest($" + n2 +
         "::text[]) p) SELECT count(*) FROM n";
}

bool PostgresTimerStore::IsScheduleKeyOf(const std::string& id) { return IsScheduleKey(id); }

void PostgresTimerStore::AppendCountDeltas(const StateCounts& delta, PgParams& params,
                                           const ScheduleCounts& schedule_delta) {
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

std::vector<DueNotice> PostgresTimerStore::Notices(const std::vector<RecordChange>& changes) const {
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

Status PostgresTimerStore::Transaction(PgConnection& c, std::vector<QueuedWrite>& group,
                                       std::vector<Status>& results,
                                       std::vector<RecordChange>& changes, bool insert_only) {
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
  std::map<std::string, ScheduleColumns> schedules;
  if (!schedule_ids.empty()) {
    Result<PgResult> r = c.Exec(
        "SELECT id, state, record, plan FROM tickwheel_schedules WHERE id = ANY($1::text[]) "
        "ORDER BY id FOR UPDATE",
        {PgTextArray(schedule_ids)});
    if (!r.ok()) return fail(r.status());
    for (int i = 0; i < r->rows(); ++i) {
      schedules.emplace(r->Text(i, 0),
                        ScheduleColumns{r->Int(i, 1), r->Bytes(i, 2), r->Bytes(i, 3)});
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
  changes = txn.TakeChanges();
  const std::vector<ScheduleChange> schedule_changes = txn.TakeScheduleChanges();
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

Status PostgresTimerStore::WriteSchedules(PgConnection& c,
                                          const std::vector<ScheduleChange>& changes) {
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
    Status s = c.Exec(std::string("INSERT INTO tickwheel_schedules (id, shard, state, record, plan) "
                                  "SELECT * FROM ") + kScheduleUnnest,
                      inserts.Params())
                   .status();
    if (!s.ok()) return s;
  }
  if (!updates.empty()) {
    Status s = c.Exec(std::string("UPDATE tickwheel_schedules t SET state = v.state, "
                                  "record = v.record, plan = v.plan FROM ") +
                          kScheduleUnnest +
                          " AS v(id, shard, state, record, plan) WHERE t.id = v.id",
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

std::int64_t PostgresTimerStore::WallNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace tickwheel::server
