// SPDX-License-Identifier: Apache-2.0
// The PostgreSQL store's schema and its versioned migrations.
#ifndef TICKWHEEL_SERVER_STORE_POSTGRES_SCHEMA_H_
#define TICKWHEEL_SERVER_STORE_POSTGRES_SCHEMA_H_

#include "common/status.h"
#include "store/pg_connection.h"

namespace tickwheel::server {

inline constexpr int kDefaultShards = 256;

// Brings the schema to the newest version: each migration not yet applied
// runs in its own transaction and is recorded in tickwheel_schema. Nodes
// starting at once take turns (an advisory lock), so none sees a half-made
// schema. The shard count is fixed when the schema is created: from
// `requested_shards` (0: kDefaultShards); later, a different non-zero
// `requested_shards` is refused (kInvalidArgument) rather than ignored.
// Returns the schema's shard count.
Result<int> MigrateSchema(PgConnection& conn, int requested_shards);

// The tables (all prefixed tickwheel_):
//   timers(id text collate "C" primary key, shard, state, due_ms,
//          updated_ms, record bytea, flow)   record: store/record_codec.h
//     indexes: (due_ms, id), (shard, due_ms, id) and (flow, due_ms, id) of
//     pending and delivering timers; (state, updated_ms, id) of finished ones
//   flows(flow primary key, settings)   flow/flow_settings.h
//   flow_shares(flow, node_id, rate, burst, max_in_flight, demand,
//               expires_at)   a node's lease on a share of a flow's budget
//   flow_holds(flow primary key, until_ms)   Retry-After holds
//   flow_stats(node_id, flow, sent, delivered, throttled, in_flight,
//              lowered_rate, expires_at)
//     each node's last minute per flow (flow/flow_shares.h)
//   shard_leases(shard primary key, owner, epoch, expires_at)
//   nodes(node_id primary key, expires_at, started_at)
//   counts(state primary key, n) + count_deltas(seq, state, delta):
//     writers append deltas (no contended row); a periodic fold adds them up
//   meta(key primary key, value): "shards"
//   schema(version primary key, applied_at)

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_STORE_POSTGRES_SCHEMA_H_
