// SPDX-License-Identifier: Apache-2.0
// FlowShares: a cluster node's leases on shares of the limited flows'
// budgets, in PostgreSQL (docs/flows.md, "The cluster budget"), with the
// flows' Retry-After holds and each node's numbers for the API.
#ifndef TICKWHEEL_SERVER_FLOW_FLOW_SHARES_H_
#define TICKWHEEL_SERVER_FLOW_FLOW_SHARES_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/server_clock.h"
#include "flow/flow_gate.h"
#include "flow/flow_registry.h"
#include "flow/flow_service.h"
#include "tickwheel/internal/mutex.h"

namespace tickwheel::server {

class PgConnection;

struct FlowSharesOptions {
  std::string postgres;  // conninfo
  std::string node_id;
  // A share's lease: renewed every round; a dead node's share is taken over
  // once it expired.
  std::chrono::milliseconds lease{std::chrono::seconds(10)};
  std::chrono::milliseconds round{std::chrono::milliseconds(200)};
  std::chrono::milliseconds stats_every{std::chrono::seconds(2)};
};

struct FlowSharesCallbacks {
  // This node's flows now (Scheduler::Flows).
  std::function<std::vector<FlowStats>()> flows;
  // This node's share of limited flow `flow` is now `share` (nullopt:
  // none), good until `until` (steady clock) unless renewed:
  // Scheduler::SetFlowShare. Called on the shares' thread, never under its
  // lock.
  std::function<void(const std::string& flow, std::optional<FlowLimits> share, TimePoint until)>
      share;
};

// Every round (and at once after Nudge), in one transaction: an advisory
// lock per limited flow with timers due here or a share held (in key order),
// the other nodes' unexpired shares and demands read, this node's target
// computed (flow/flow_budget.h: SplitBudget), and its share moved towards
// it (StepShare): lowered locally before the transaction, raised locally
// only after it committed; its row renewed to now + lease. A node whose
// rounds fail keeps its shares until one lease after the start of the last
// round that succeeded, then drops them (before the database would let
// another node take them). The same thread publishes this node's holds
// (Retry-After) and reads everyone's into the registry every round, and
// publishes this node's numbers every stats_every.
//
// Thread safety: Activity from any thread; Start, Nudge, Stop from the owner.
class FlowShares {
 public:
  FlowShares(FlowSharesOptions options, FlowSharesCallbacks callbacks, FlowRegistry& registry,
             ServerClock& clock);
  ~FlowShares();  // Stop(false)

  void Start();
  void Nudge();
  // Stops the rounds; with `release`, gives every share back and removes
  // this node's numbers (a drained node), so others take them at once.
  void Stop(bool release);

  // What the live nodes are doing with each flow (their published numbers,
  // summed): the API's activity in cluster mode.
  Result<std::map<std::string, FlowActivity>> Activity() const;

  std::uint64_t rounds() const { return rounds_.load(); }

 private:
  void Loop();
  bool Round(PgConnection& c);
  bool PublishHolds(PgConnection& c);
  bool PublishStats(PgConnection& c, const std::vector<FlowStats>& flows);
  void SetShare(const std::string& flow, std::optional<FlowLimits> share);
  void DropAll();

  const FlowSharesOptions options_;
  const FlowSharesCallbacks callbacks_;
  FlowRegistry& registry_;
  ServerClock& clock_;
  const std::unique_ptr<Sleeper> sleeper_;

  // The shares' thread's: what this node uses of each flow, and until when
  // its leases hold locally.
  std::map<std::string, FlowLimits> held_;
  TimePoint valid_until_{};
  TimePoint next_stats_{};
  std::map<std::string, std::int64_t> published_holds_;
  std::unique_ptr<PgConnection> conn_;
  std::string last_error_;

  mutable internal::Mutex mutex_;
  bool stop_ TW_GUARDED_BY(mutex_) = false;
  mutable internal::Mutex read_mutex_;
  mutable std::unique_ptr<PgConnection> read_conn_ TW_GUARDED_BY(read_mutex_);  // Activity's
  std::atomic<std::uint64_t> rounds_{0};
  std::thread thread_;
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_FLOW_FLOW_SHARES_H_
