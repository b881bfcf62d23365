// SPDX-License-Identifier: Apache-2.0
// The cluster's store: every timer in PostgreSQL, shared by the nodes.
#ifndef TICKWHEEL_SERVER_STORE_POSTGRES_TIMER_STORE_H_
#define TICKWHEEL_SERVER_STORE_POSTGRES_TIMER_STORE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "store/timer_store.h"

namespace tickwheel::server {

// Timers are spread over shards by a hash of their id (ShardOfId: of the
// part before an '@', so a schedule and its occurrences share one), fixed
// when the schema is created (store/postgres_schema.h). A group of
// mutations is one transaction: the group's rows are read and locked (FOR
// UPDATE, in id order), the mutations run in memory, and the net changes
// are written with one statement per kind (insert, update, delete), with
// the count deltas, and committed — durably (synchronous_commit) if one of
// them asked, else without waiting for the WAL flush. Fenced mutations
// first check, in the same transaction, that this node's lease on each of
// their shards still has its owner and epoch and has not expired by the
// database's clock, and lock those lease rows (FOR SHARE), so no takeover
// can commit in between; a mutation whose shard fails the check fails with
// kFenced and writes nothing. A transaction that conflicts with another
// node's (a unique violation on a create, a deadlock) is run again, up to 3
// times: a mutation may run more than once, and must only fill its outputs.
//
// A group of creates of new ids (no fencing) first takes a shorter path:
// the mutations run against no rows, and if every id they read became an
// insert, the rows, their count deltas and their announcements are one
// INSERT statement committed on its own (durably); it fails and writes
// nothing if an id exists, and the group then runs as above (so an
// existing id still answers as the mutations decide: 200 or 409). Every
// statement is prepared once per connection (PgConnection).
//
// Changes to timers due within notify_horizon_ms are announced with NOTIFY
// on channel "tickwheel_due" (DuePayloads), so the node owning their shard
// arms them; this node's own are told to its DueListener directly.
Result<std::unique_ptr<TimerStore>> OpenPostgresTimerStore(const StoreOptions& options);

// The shard of `id` among `shards`: FNV-1a of the bytes of ShardKeyOf(id)
// (the id up to an '@': timer/occurrence_id.h), modulo.
int ShardOfId(std::string_view id, int shards);

inline constexpr std::string_view kDueChannel = "tickwheel_due";
// A flow's settings changed (UpdateFlowSettings): the payload is its key.
inline constexpr std::string_view kFlowsChannel = "tickwheel_flows";

// A NOTIFY payload: "<node id>\n" then one line per change: "<shard> <due_ms>
// <id> <flow>", or "<shard> - <id> <flow>" when the timer is no longer
// scheduled. (A line of a node from before flows has no flow: "".)
struct DueNotice {
  int shard;
  std::optional<std::int64_t> due_ms;
  std::string id;
  std::string flow;
};
struct DuePayload {
  std::string node_id;
  std::vector<DueNotice> notices;
};
// Payloads of at most ~7,900 bytes each (PostgreSQL's limit is 8,000).
std::vector<std::string> EncodeDuePayloads(const std::string& node_id,
                                           const std::vector<DueNotice>& notices);
// nullopt for a payload that is not one of ours.
std::optional<DuePayload> DecodeDuePayload(std::string_view payload);

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_STORE_POSTGRES_TIMER_STORE_H_
