// SPDX-License-Identifier: Apache-2.0
#include "store/postgres_schema.h"

#include <string>
#include <vector>

namespace tickwheel::server {
namespace {

// Migration N is kMigrations[N - 1]; "$SHARDS" is the shard count. Append
// new ones; never edit one that has shipped.
const std::vector<std::string> kMigrations = {
    R"sql(
CREATE TABLE tickwheel_meta (key text PRIMARY KEY, value text NOT NULL);
INSERT INTO tickwheel_meta VALUES ('shards', '$SHARDS');
CREATE TABLE tickwheel_timers (
  id text COLLATE "C" PRIMARY KEY,
  shard integer NOT NULL,
  state smallint NOT NULL,
  due_ms bigint NOT NULL,
  updated_ms bigint NOT NULL,
  record bytea NOT NULL);
CREATE INDEX tickwheel_timers_scheduled ON tickwheel_timers (due_ms, id) WHERE state IN (0, 1);
CREATE INDEX tickwheel_timers_shard_due ON tickwheel_timers (shard, due_ms, id) WHERE state IN (0, 1);
CREATE INDEX tickwheel_timers_finished ON tickwheel_timers (state, updated_ms, id) WHERE state IN (2, 3, 4);
CREATE TABLE tickwheel_shard_leases (
  shard integer PRIMARY KEY,
  owner text,
  epoch bigint NOT NULL DEFAULT 0,
  expires_at timestamptz NOT NULL DEFAULT 'epoch');
INSERT INTO tickwheel_shard_leases (shard) SELECT generate_series(0, $SHARDS - 1);
CREATE TABLE tickwheel_nodes (
  node_id text PRIMARY KEY,
  expires_at timestamptz NOT NULL,
  started_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE tickwheel_counts (state smallint PRIMARY KEY, n bigint NOT NULL);
INSERT INTO tickwheel_counts SELECT generate_series(0, 4), 0;
CREATE TABLE tickwheel_count_deltas (
  seq bigserial PRIMARY KEY, state smallint NOT NULL, delta bigint NOT NULL);
)sql",
    // 2: flows (docs/flows.md). Rows from before get their flow when a node
    // of this version opens the store (BackfillFlows).
    R"sql(
ALTER TABLE tickwheel_timers ADD COLUMN flow text COLLATE "C";
CREATE INDEX tickwheel_timers_flow_due ON tickwheel_timers (flow, due_ms, id) WHERE state IN (0, 1);
CREATE TABLE tickwheel_flows (flow text COLLATE "C" PRIMARY KEY, settings text NOT NULL);
CREATE TABLE tickwheel_flow_shares (
  flow text COLLATE "C" NOT NULL,
  node_id text NOT NULL,
  rate double precision,
  burst bigint,
  max_in_flight bigint,
  demand bigint NOT NULL,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (flow, node_id));
CREATE TABLE tickwheel_flow_holds (flow text COLLATE "C" PRIMARY KEY, until_ms bigint NOT NULL);
CREATE TABLE tickwheel_flow_stats (
  node_id text NOT NULL,
  flow text COLLATE "C" NOT NULL,
  sent bigint NOT NULL,
  delivered bigint NOT NULL,
  throttled bigint NOT NULL,
  in_flight bigint NOT NULL,
  lowered_rate double precision NOT NULL,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (node_id, flow));
)sql",
    // 3: schedules (server/schedule/), kept with their occurrences' shard;
    // their states counted in tickwheel_counts from 100 on.
    R"sql(
CREATE TABLE tickwheel_schedules (
  id text COLLATE "C" PRIMARY KEY,
  shard integer NOT NULL,
  state smallint NOT NULL,
  record bytea NOT NULL);
CREATE INDEX tickwheel_schedules_state ON tickwheel_schedules (state, id);
INSERT INTO tickwheel_counts SELECT 100 + generate_series(0, 2), 0;
)sql",
    // 4: the target's host as a column, so that a listing filtered by host
    // is filtered in SQL (NULL: written before, read to be checked); each
    // node's process (instance), clock offset, and whether it takes shards
    // (a node that refuses them, its clock off, is not counted in the fair
    // share) beside its heartbeat.
    R"sql(
ALTER TABLE tickwheel_timers ADD COLUMN host text COLLATE "C";
ALTER TABLE tickwheel_nodes ADD COLUMN instance text NOT NULL DEFAULT '';
ALTER TABLE tickwheel_nodes ADD COLUMN clock_offset_ms bigint;
ALTER TABLE tickwheel_nodes ADD COLUMN accepting boolean NOT NULL DEFAULT true;
)sql",
    // 5: a schedule's plan apart from its record (ScheduleRow::plan); ''
    // for a row written before, whose record holds the whole schedule.
    R"sql(
ALTER TABLE tickwheel_schedules ADD COLUMN plan bytea NOT NULL DEFAULT ''::bytea;
)sql",
};

constexpr const char* kLockKey = "7304251998466113";  // pg_advisory_lock key

}  // namespace

Result<int> MigrateSchema(PgConnection& conn, int requested_shards) {
  if (requested_shards < 0 || requested_shards > 65536) {
    return Status::Invalid("bad_flag", "--shards must be 1..65536");
  }
  if (Result<PgResult> r = conn.Exec(std::string("SELECT pg_advisory_lock(") + kLockKey + ")"); !r.ok()) {
    return r.status();
  }
  auto unlock = [&] { (void)conn.Exec(std::string("SELECT pg_advisory_unlock(") + kLockKey + ")"); };
  Result<PgResult> created = conn.Exec(
      "CREATE TABLE IF NOT EXISTS tickwheel_schema (version integer PRIMARY KEY, "
      "applied_at timestamptz NOT NULL DEFAULT now())");
  if (!created.ok()) {
    unlock();
    return created.status();
  }
  Result<PgResult> applied = conn.Exec("SELECT coalesce(max(version), 0) FROM tickwheel_schema");
  if (!applied.ok()) {
    unlock();
    return applied.status();
  }
  const int shards = requested_shards > 0 ? requested_shards : kDefaultShards;
  for (auto version = static_cast<std::size_t>(applied->Int(0, 0)); version < kMigrations.size();
       ++version) {
    std::string sql = kMigrations[version];
    for (std::size_t at; (at = sql.find("$SHARDS")) != std::string::npos;) {
      sql.replace(at, 7, std::to_string(shards));
    }
    Status s = conn.Begin();
    if (s.ok()) s = conn.ExecScript(sql);
    if (s.ok()) {
      s = conn.Exec("INSERT INTO tickwheel_schema (version) VALUES ($1)",
                    {std::to_string(version + 1)})
              .status();
    }
    if (s.ok()) s = conn.Commit();
    if (!s.ok()) {
      conn.Rollback();
      unlock();
      return Status(s.code() == StatusCode::kUnavailable ? StatusCode::kUnavailable
                                                         : StatusCode::kInvalidArgument,
                    "schema", "migrating the PostgreSQL schema to version " +
                                  std::to_string(version + 1) + " failed: " + s.message());
    }
  }
  Result<PgResult> stored = conn.Exec("SELECT value FROM tickwheel_meta WHERE key = 'shards'");
  unlock();
  if (!stored.ok()) return stored.status();
  const int schema_shards = static_cast<int>(stored->Int(0, 0));
  if (requested_shards > 0 && requested_shards != schema_shards) {
    return Status::Invalid("bad_flag",
                           "--shards " + std::to_string(requested_shards) +
                               ": this database was created with " +
                               std::to_string(schema_shards) +
                               " shards, fixed since; drop the flag or use that number");
  }
  return schema_shards;
}

}  // namespace tickwheel::server
