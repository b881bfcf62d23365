// SPDX-License-Identifier: Apache-2.0
// Scheduler: the in-memory tier. Keeps the timers due within a look-ahead
// window, of the shards this node owns, in a Wheel, refills it from the
// store's due index as time moves, and hands due timers to the dispatcher.
#ifndef TICKWHEEL_SERVER_SCHEDULER_SCHEDULER_H_
#define TICKWHEEL_SERVER_SCHEDULER_SCHEDULER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/server_clock.h"
#include "flow/flow_gate.h"
#include "flow/flow_registry.h"
#include "store/timer_store.h"
#include "tickwheel/internal/mutex.h"
#include "tickwheel/wheel.h"

namespace tickwheel::server {

struct SchedulerOptions {
  // Timers due within this much of now are kept in memory.
  std::chrono::milliseconds window{std::chrono::seconds(60)};
  // At most this many timers in memory (in the wheel or in flight); beyond
  // it the window shrinks (a backlog is loaded as it drains).
  std::size_t max_window_timers = 200'000;
  // Cluster mode: a limited flow starts attempts only within this node's
  // share of its budget (SetFlowShare).
  bool shared_flow_budget = false;
};

// A due timer handed to the dispatcher: its attempt starts now.
struct FiredTimer {
  DueEntry entry;  // due_ms, id, flow
  // How long it waited for its flow's limits (flow/flow_gate.h): lateness
  // flow control caused, not the server.
  std::int64_t throttled_ms = 0;
};

// The window ends at a position, not a time: every scheduled timer of an
// owned shard with (due_ms, id) < window_end() is loaded, i.e. in the map
// (in the wheel, waiting for its flow, or in flight), or stale (the store
// changed it and the dispatcher's claim will drop it), or of a deferred
// flow (below). Timers beyond may be loaded too. The map never holds more
// than max_window_timers: a refill loads up to the cap and ends the window
// at the last timer it loaded, even inside one millisecond; an Arm at the
// cap ends the window before that timer instead of loading it. The map is
// a hint, the store is the truth.
//
// Flows (flow/flow_gate.h). Each flow holds at most its quota of the map
// (what it can send soon). A flow at its quota is deferred from a position
// D: its timers at D or later (within the window) stay in the store only;
// all of its timers before D are loaded. Scans of the window skip deferred
// flows' entries in the store (a backlog of millions behind a slow flow
// costs a bounded time per scan, and never keeps another flow's timers out
// of the window); when a deferred flow has used half its quota, its own
// index is scanned from D. Deferred flows' own scans stop at half the map,
// so the rest of the window is always there for the other flows. A fired
// timer waits in its flow's queue until the flow's gate lets it go; its
// attempt's slot is given back when the attempt ends (AttemptEnded).
//
// Thread safety: every method but Start/Stop may be called from any thread;
// `fire` is called on the scheduler's thread, under no lock.
// Memory: one wheel node and one map entry (with the id) per loaded timer,
// and a flow queue node per timer waiting for its flow.
//
//   Scheduler scheduler(store, clock, {}, [&](std::vector<DueEntry> due) {...});
//   store.SetDueListener([&](auto& id, auto due) { scheduler.OnDueChange(id, due); });
//   scheduler.AddShards({0});
//   scheduler.Start();
class Scheduler {
 public:
  using Fire = std::function<void(std::vector<FiredTimer>)>;

  // REQUIRES: `store`, `clock` and `flows` outlive this. `flows` may be
  // null: every flow is unlimited.
  Scheduler(TimerStore& store, ServerClock& clock, SchedulerOptions options, Fire fire,
            FlowRegistry* flows = nullptr);
  ~Scheduler();  // Stop()

  // Starts the thread. Its first refill loads everything overdue.
  void Start();
  // Stops firing; after it returns `fire` is not called again. Idempotent.
  void Stop();

  // While paused, nothing is fired: due timers wait (loaded, up to the
  // cap) and fire once resumed, late but never lost; everything else goes
  // on. Timers already fired finish. May be called before Start.
  void Pause(bool paused);
  bool paused() const;

  // This node now owns `shards`: their timers within the window are loaded
  // (by the scheduler's thread, soon).
  void AddShards(const std::vector<int>& shards);
  // This node no longer owns `shards`: their timers are dropped (those in
  // flight finish; the store fences their outcome).
  void RemoveShards(const std::vector<int>& shards);
  std::vector<int> shards() const;
  // Whether this node fires the shard `id` is in.
  bool OwnsShardOf(const std::string& id) const;
  // When (wall ms) this node began firing the shard `id` is in: its start,
  // or the takeover; now if it does not own it. Times due well before it
  // were missed by this node (a schedule's catch-up policy decides).
  std::int64_t OwnedSinceMs(const std::string& id) const;
  // Loads every owned shard's window again (changes may have been missed).
  void ReloadShards();
  // Timers of `shards` in flight (fired, not yet finished).
  std::size_t InFlightOf(const std::vector<int>& shards) const;

  // `id` (of flow `flow`) is now due at `due_ms`, or (nullopt) no longer
  // scheduled, in the store (the store's DueListener). Ignored for shards
  // not owned. If `id` is in flight, the change applies once it is finished.
  void OnDueChange(const std::string& id, std::optional<std::int64_t> due_ms,
                   const std::string& flow);

  // How long each of the fired `ids`, claimed and about to be sent, waits
  // before its send: its flow's pace at the send (flow/flow_limiter.h,
  // StartAt); zero for a flow without a rate, or an id not in flight.
  std::vector<Duration> StartDelays(const std::vector<std::string>& ids);
  // The attempt of fired `id` ended (answered, failed, given up): its
  // flow's slot is free, and `signal` is what the answer said about the
  // flow (429s, Retry-After). Finish without it frees the slot too (a claim
  // that found the timer stale made no attempt).
  void AttemptEnded(const std::string& id, const FlowSignal& signal);
  // The receiver of a fired entry is done with it. REQUIRES: `id` in flight.
  void Finish(const std::string& id);
  // Like Finish, but the timer is still due at `due_ms` in the store and
  // fires again no earlier than `delay` from now (after a claim that could
  // not be written, so a failing store is not retried in a spin).
  void FinishAndRetryIn(const std::string& id, std::int64_t due_ms,
                        std::chrono::milliseconds delay);

  // Flows' settings changed (this node wrote them): look now rather than
  // within the second.
  void Nudge();
  // Cluster: this node's share of limited flow `flow` (nullopt: none), good
  // until `until` (flow/flow_shares.h).
  void SetFlowShare(const std::string& flow, std::optional<FlowLimits> share, TimePoint until);
  // Every flow active here (or configured), now; and the totals of those
  // forgotten since (FlowGate::Retired).
  std::vector<FlowStats> Flows() const;
  FlowStats RetiredFlows() const;

  std::size_t loaded() const;     // in the wheel, waiting for its flow, or in flight
  std::size_t in_flight() const;
  DueEntry window_end() const;
  std::int64_t window_end_ms() const { return window_end().due_ms; }
  // Refills done: of the window (each loads from the window end to now +
  // window) and of deferred flows (from where they were deferred).
  std::uint64_t refills() const;
  // Timers the overdue sweep found not loaded (see Loop).
  std::uint64_t swept() const;

 private:
  using Flow = FlowGate::Flow;
  struct Entry {
    TimerId timer;        // valid while waiting in the wheel
    std::int64_t due_ms;  // as in the store when it was loaded or armed
    Flow* flow = nullptr;
    bool in_flight = false;
    bool waiting = false;  // fired by the wheel, waiting for its flow's gate
    bool slot = false;     // in flight, holding one of its flow's attempts
    // Loaded by its flow's own refill: waiting for its flow since then (wall
    // clock; 0: not held).
    std::int64_t held_since_ms = 0;
    // While in flight: the due time to re-arm at when it is finished, if the
    // store scheduled it again meanwhile.
    std::optional<std::int64_t> rearm;
  };
  using Entries = std::unordered_map<std::string, Entry>;

  void Loop();
  // Loads `shards` from `from` to `to_ms`, up to the room under the cap,
  // skipping deferred flows. False if the store could not be read (nothing
  // was loaded).
  bool Load(const std::vector<int>& shards, const DueEntry& from, std::int64_t to_ms,
            std::size_t* loaded = nullptr) TW_EXCLUDES(mutex_);
  // Loads more of deferred `flow` from its own index.
  void RefillFlow(Flow& flow) TW_EXCLUDES(mutex_);
  // A deferred flow whose turn to be refilled it is, or null.
  Flow* FlowToRefill() TW_REQUIRES(mutex_);
  // Whether `flow` may have `e` loaded (under its quota, before where it is
  // deferred); if not, the flow is deferred from `e` at the latest.
  bool Admit(Flow& flow, const DueEntry& e) TW_REQUIRES(mutex_);
  void Defer(Flow& flow, const DueEntry& from) TW_REQUIRES(mutex_);
  // Drops what `flow` holds beyond its (smaller) quota, from its latest
  // timers down, and defers it from the first dropped.
  void Evict(Flow& flow) TW_REQUIRES(mutex_);
  // A new map entry for `id` of `flow`.
  Entries::iterator Insert(const std::string& id, std::int64_t due_ms, Flow& flow)
      TW_REQUIRES(mutex_);
  void FreeSlot(Entry& entry, const FlowSignal& signal) TW_REQUIRES(mutex_);
  static constexpr std::chrono::seconds kCollectEvery{10};
  static constexpr std::chrono::seconds kLoadRetryDelay{1};
  // Every kSweepEvery the scheduler looks for timers overdue by more than
  // kSweepLag that it has not loaded: none, unless a change was missed (in a
  // cluster, an announcement lost on the way), which then fires late rather
  // than never.
  static constexpr std::chrono::seconds kSweepEvery{10};
  static constexpr std::int64_t kSweepLagMs = 5'000;
  bool Owned(const std::string& id) const TW_REQUIRES(mutex_);
  bool InWindow(std::int64_t due_ms, const std::string& id) const TW_REQUIRES(mutex_);
  // Puts `entry` (not in flight) in the wheel at `deadline`.
  void PlaceLocked(const std::string& id, Entry& entry, TimePoint deadline)
      TW_REQUIRES(mutex_);
  void ArmLocked(const std::string& id, std::int64_t due_ms, const std::string& flow)
      TW_REQUIRES(mutex_);
  void EraseLocked(Entries::iterator it) TW_REQUIRES(mutex_);
  void WakeForRoomLocked() TW_REQUIRES(mutex_);

  TimerStore& store_;
  ServerClock& clock_;
  const SchedulerOptions options_;
  const Fire fire_;
  const std::unique_ptr<Sleeper> sleeper_;

  mutable internal::Mutex mutex_;
  Wheel<std::string> wheel_ TW_GUARDED_BY(mutex_);
  Entries entries_ TW_GUARDED_BY(mutex_);
  FlowGate gate_ TW_GUARDED_BY(mutex_);
  std::set<Flow*> deferred_ TW_GUARDED_BY(mutex_);  // flows with `deferred` set
  TimePoint flow_refill_retry_at_ TW_GUARDED_BY(mutex_) = TimePoint::min();
  TimePoint gate_next_ TW_GUARDED_BY(mutex_) = TimePoint::max();
  TimePoint next_collect_ TW_GUARDED_BY(mutex_);
  std::set<int> shards_ TW_GUARDED_BY(mutex_);
  std::unordered_map<int, std::int64_t> owned_since_ TW_GUARDED_BY(mutex_);  // shard -> wall ms
  std::vector<int> shards_to_load_ TW_GUARDED_BY(mutex_);
  std::size_t in_flight_ TW_GUARDED_BY(mutex_) = 0;
  DueEntry window_end_ TW_GUARDED_BY(mutex_){INT64_MIN, ""};
  TimePoint sleeping_until_ TW_GUARDED_BY(mutex_) = TimePoint::max();
  TimePoint retry_load_at_ TW_GUARDED_BY(mutex_) = TimePoint::min();
  std::uint64_t refills_ TW_GUARDED_BY(mutex_) = 0;
  std::uint64_t swept_ TW_GUARDED_BY(mutex_) = 0;
  TimePoint next_sweep_ TW_GUARDED_BY(mutex_);
  bool stop_ TW_GUARDED_BY(mutex_) = false;
  bool paused_ TW_GUARDED_BY(mutex_) = false;
  std::thread thread_;
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_SCHEDULER_SCHEDULER_H_
