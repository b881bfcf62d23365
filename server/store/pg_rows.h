// SPDX-License-Identifier: Apache-2.0
// The PostgreSQL store's rows: decoding the rows it reads (timers,
// schedules), the columns of the rows it writes as array parameters (one
// INSERT, UPDATE or DELETE of many rows: unnest($1::text[], ...)), and the
// query of the per-state counts. Pure functions and values: no connection.
#ifndef TICKWHEEL_SERVER_STORE_PG_ROWS_H_
#define TICKWHEEL_SERVER_STORE_PG_ROWS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "store/pg_connection.h"
#include "store/timer_store.h"

namespace tickwheel::server {

// The timer `id` from its stored record bytes; kCorrupt if they do not
// decode.
Result<std::optional<TimerRecord>> DecodeRow(const std::string& id, const std::string& bytes);

// The schedule `id` from its row; kCorrupt for a state this server does not
// know.
Result<std::optional<ScheduleRow>> DecodeScheduleRow(const std::string& id, std::int64_t state,
                                                     std::string record, std::string plan);

// A schedule's columns as a write path reads them (under its lock), decoded
// (DecodeScheduleRow) when a mutation asks for the schedule.
struct ScheduleColumns {
  std::int64_t state = 0;
  std::string record;
  std::string plan;
};

// Each count (state, n): its total plus the deltas not yet folded into it,
// summed in one pass over the deltas. (A sum per state, as before, scanned
// the table once per state: eight times. The table holds the dead rows of
// every fold until autovacuum comes, a minute at most: under a 3-node
// cluster's 1,000 deliveries a second, 311 ms a read, three reads a second.)
inline constexpr char kCountsQuery[] =
    "SELECT c.state, c.n + coalesce(d.total, 0) AS n FROM tickwheel_counts c LEFT JOIN "
    "(SELECT state, sum(delta) AS total FROM tickwheel_count_deltas GROUP BY state) d "
    "ON d.state = c.state";

// Rows::Params() are $1..$8 in this order: a query that adds parameters
// numbers them from $9.
inline constexpr char kTimerColumns[] = "id, shard, state, due_ms, updated_ms, flow, record, host";
inline constexpr char kUnnestRows[] =
    "unnest($1::text[], $2::int[], $3::smallint[], $4::bigint[], $5::bigint[], $6::text[], "
    "$7::bytea[], $8::text[])";

// A group of at least this many new timers is written by COPY, not by one
// INSERT ... SELECT (PostgresTimerStore::CopyInsertOnly).
inline constexpr std::size_t kPgCopyRows = 256;

// The columns of rows to write, as array parameters in binary form (the
// element types kUnnestRows casts to).
// Thread safety: a value owned by one thread.
struct Rows {
  std::vector<std::string> ids, flows, records, hosts;
  std::vector<std::int64_t> shards, states, due, updated;
  // The target of the last row added: a batch's rows mostly share theirs,
  // and its host is parsed once for them.
  std::string last_target;
  void Add(const TimerRecord& r, int shard);
  PgParams Params() const;
  // The rows as `COPY tickwheel_timers (kTimerColumns) FROM STDIN (FORMAT
  // binary)` takes them (the write path copies groups of kPgCopyRows new
  // rows or more).
  std::string CopyData() const;
  bool empty() const { return ids.empty(); }
};

inline constexpr char kScheduleUnnest[] =
    "unnest($1::text[], $2::int[], $3::smallint[], $4::bytea[], $5::bytea[])";

// Schedule rows to write, as array parameters in binary form (the element
// types kScheduleUnnest casts to).
// Thread safety: a value owned by one thread.
struct ScheduleRows {
  std::vector<std::string> ids, records, plans;
  std::vector<std::int64_t> shards, states;
  void Add(const ScheduleRow& r, int shard);
  PgParams Params() const;
  bool empty() const { return ids.empty(); }
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_STORE_PG_ROWS_H_
