// SPDX-License-Identifier: Apache-2.0
// FlowGate: the flows of one node at run time. For each flow: its limiter,
// the due timers that wait for it (in due order), how much of the
// scheduler's window it may hold, and its counters. The scheduler owns it.
#ifndef TICKWHEEL_SERVER_FLOW_FLOW_GATE_H_
#define TICKWHEEL_SERVER_FLOW_FLOW_GATE_H_

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "flow/flow_limiter.h"
#include "flow/flow_limits.h"
#include "flow/flow_registry.h"
#include "flow/minute_counter.h"
#include "store/timer_store.h"
#include "tickwheel/time.h"

namespace tickwheel::server {

// What an attempt's answer says about its flow.
struct FlowSignal {
  bool delivered = false;           // a 2xx (or a JetStream acknowledgement)
  bool too_many_requests = false;   // a 429 without Retry-After
  std::int64_t retry_after_ms = 0;  // a 429 or 503 with Retry-After: hold the flow
};

// A due timer the gate let go: its attempt starts now. `throttled_ms`: how
// long it waited for its flow (0 if it did not).
struct ReleasedEntry {
  DueEntry entry;
  std::int64_t throttled_ms = 0;
};

// One flow on this node, for /metrics, the API and the cluster budget.
struct FlowStats {
  std::string key;
  FlowLimits limits;      // the flow's, from its settings and the defaults
  FlowLimits gate;        // what this node works with: the limits, or its share
  bool has_share = false;  // cluster: a share of a limited flow was granted
  std::int64_t waiting = 0;    // due, waiting for the flow here
  std::int64_t in_flight = 0;  // attempts started, not yet answered
  std::int64_t loaded = 0;     // in the window (waiting, in the wheel, in flight)
  bool deferred = false;       // more of it is due in the window, in the store only
  std::int64_t sent_last_minute = 0;       // attempts started
  std::int64_t delivered_last_minute = 0;  // answered 2xx
  std::int64_t throttled_last_minute = 0;  // attempts that waited for the flow
  std::uint64_t sent_total = 0;
  std::uint64_t delivered_total = 0;
  std::uint64_t throttled_total = 0;
  double lowered_rate = 0;     // after 429s; 0 when not lowered
  std::int64_t held_until_ms = 0;  // a Retry-After hold, wall clock; 0: none
  // What it asks of the cluster's budget: waiting + in flight (+ its window
  // quota while more waits in the store).
  std::int64_t demand = 0;
};

// Each flow gets a gate (FlowLimiter) over its limits, or in a cluster
// (`shared_budget`) over this node's share of a limited flow's limits,
// none until one is granted (SetShare). Due timers wait in their flow's
// queue, in (due_ms, id) order; Release lets them go round-robin over the
// flows, kChunk at a time, so a flow with a backlog does not get ahead of
// the others. A flow without a cap of its own has at most kFairInFlight
// attempts started and not yet answered, so its backlog cannot fill the
// delivery pipeline in front of the others' either.
//
// Window quotas (Quota): what of a flow's due timers the scheduler keeps in
// memory, "what it can send soon": none while paused; with a rate, its burst
// and 2 s of its rate; with a cap, 4 times it; at least kMinQuota, at most a
// quarter of the window.
//
// An attempt's slot is given back by Ended, with what its answer said (a
// 429 lowers the rate, a Retry-After holds the whole flow, here at once and
// on the other nodes through the registry).
//
// Thread safety: none; the scheduler calls it under its lock.
// Memory: one Flow (~2 KB) per flow active in the last minute or
// configured, and a map node per waiting timer.
class FlowGate {
 public:
  static constexpr std::size_t kChunk = 64;
  static constexpr std::int64_t kFairInFlight = 8192;
  static constexpr std::size_t kMinQuota = 256;

  struct Options {
    std::size_t window_cap = 200'000;  // the scheduler's --max-window-timers
    bool shared_budget = false;        // a cluster node: limited flows by share
  };

  struct Item {
    std::int64_t since_ms;  // waiting for its flow since (wall clock)
    bool held;              // kept out of the window by its flow: throttled however soon it goes
    std::uint64_t round;    // the Release round it became ready in
  };

  // The scheduler's view of one flow, and the gate's. Its address is
  // stable while it has timers loaded (the gate collects idle flows only).
  struct Flow {
    explicit Flow(std::string k) : key(std::move(k)) {}
    const std::string key;
    FlowLimits limits;                 // the flow's own
    std::optional<FlowLimits> share;   // cluster: this node's share
    TimePoint share_until{};           // ... good until then
    FlowLimiter limiter;
    // The scheduler's: timers of the flow in its map, and where the flow's
    // timers stop being loaded (scheduler/scheduler.h, "Deferred flows").
    std::size_t loaded = 0;
    std::optional<DueEntry> deferred;
    bool refilling = false;
    std::optional<DueEntry> deferred_in_refill;
    // Since when (wall clock) the flow has kept timers in the store, in its
    // current run of deferrals: its held timers wait for it since then (or
    // their due time, if later).
    std::int64_t deferred_since_ms = 0;
    // Due, waiting for the limiter, by (due_ms, id).
    std::map<DueEntry, Item> waiting;
    MinuteCounter sent_1m, delivered_1m, throttled_1m;
    std::uint64_t sent_total = 0, delivered_total = 0, throttled_total = 0;
    bool queued = false;                   // in the runnable queue
    TimePoint wake_at = TimePoint::max();  // in the timed queue at this time
  };

  // `flows` (may be null: every flow unlimited) must outlive this.
  FlowGate(FlowRegistry* flows, Options options);

  // The flow `key`, made on first use with its limits (and its hold, if
  // it has one; `now_ms` is the wall clock at `now`).
  Flow& Intern(const std::string& key, TimePoint now, std::int64_t now_ms);
  Flow* Find(const std::string& key);

  // Takes in what changed in the registry (settings, holds) since the last
  // call. Returns the flows whose quota became smaller (the scheduler drops
  // what they hold beyond it).
  std::vector<Flow*> Sync(TimePoint now, std::int64_t now_ms);
  std::size_t Quota(const Flow& flow) const;

  // `entry` of `flow` is due and waits for its flow since `since_ms`;
  // `held`: the flow kept it out of the window past its due time.
  void Ready(Flow& flow, const DueEntry& entry, std::int64_t since_ms, bool held);
  // It no longer waits (cancelled, rescheduled, its shard lost). False if
  // it did not.
  bool Unready(Flow& flow, const DueEntry& entry);
  // Lets go what the flows allow now, round-robin, appending to `out`.
  // Returns when to call again if nothing else happens (TimePoint::max():
  // only after a Ready, Ended, Sync or SetShare).
  TimePoint Release(TimePoint now, std::int64_t now_ms, std::vector<ReleasedEntry>& out);
  // An attempt of `flow` that Release let go is about to be sent: when it
  // may be (FlowLimiter::StartAt; `now` or later).
  TimePoint StartAt(Flow& flow, TimePoint now) { return flow.limiter.StartAt(now); }
  // An attempt of `flow` ended (or was not made after all): its slot is
  // free; `signal` is what its answer said.
  void Ended(Flow& flow, const FlowSignal& signal, TimePoint now, std::int64_t now_ms);

  // Cluster: this node's share of flow `key` (nullopt: none), good until
  // `until`: past it the flow has no share (its lease may have gone to
  // another node) until it is renewed.
  void SetShare(const std::string& key, std::optional<FlowLimits> share, TimePoint until,
                TimePoint now, std::int64_t now_ms);

  std::vector<FlowStats> Stats(TimePoint now, std::int64_t now_ms);
  // What the flows Collect forgot had sent, delivered and had throttled
  // (so totals summed over flows never go down).
  FlowStats Retired() const { return retired_; }
  // Forgets flows with nothing loaded, waiting or in flight, nothing sent
  // in the last minute, no settings and no share.
  void Collect(std::int64_t now_ms);
  std::size_t size() const { return flows_.size(); }

 private:
  FlowLimits GateLimits(const Flow& flow) const;
  void Apply(Flow& flow, TimePoint now);
  void MarkRunnable(Flow& flow);
  void Untime(Flow& flow);  // out of the timed queue
  void ApplyHold(Flow& flow, std::int64_t until_ms, TimePoint now, std::int64_t now_ms);

  FlowRegistry* const registry_;
  const Options options_;
  std::unordered_map<std::string, std::unique_ptr<Flow>> flows_;
  std::deque<Flow*> runnable_;
  std::multimap<TimePoint, Flow*> timed_;
  std::uint64_t round_ = 0;
  std::uint64_t seen_version_ = 0;
  FlowStats retired_;
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_FLOW_FLOW_GATE_H_
