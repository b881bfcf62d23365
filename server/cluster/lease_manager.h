// SPDX-License-Identifier: Apache-2.0
// LeaseManager: a cluster node's share of the shards. It holds leases in
// tickwheel_shard_leases, renews them, takes a fair share (and the shards
// of nodes whose leases expired), gives extras back when nodes join, and
// hands everything over when the node stops.
#ifndef TICKWHEEL_SERVER_CLUSTER_LEASE_MANAGER_H_
#define TICKWHEEL_SERVER_CLUSTER_LEASE_MANAGER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "store/shard_fence.h"
#include "tickwheel/internal/mutex.h"

namespace tickwheel::server {

class PgConnection;

struct LeaseOptions {
  std::string postgres;  // conninfo
  std::string node_id;   // the node's name (--node-id)
  // This process: random, new at every start. The leases' owner is
  // "node_id#instance" (Owner()), so two processes never mistake each
  // other's leases, announcements or heartbeat for their own.
  std::string instance;
  std::chrono::milliseconds lease{std::chrono::seconds(10)};
  // Leases are renewed every lease / 3; free and expired ones are looked for
  // every `scan` (or at once when another node hands shards over).
  std::chrono::milliseconds scan{std::chrono::seconds(1)};
  // A shard being given back is released once its attempts in flight are
  // done, or after this long (their outcomes are then fenced).
  std::chrono::milliseconds release_wait{std::chrono::seconds(12)};
  // The clock: this node's wall clock is compared with the database's at
  // every heartbeat. Past max_clock_offset (certainly: the measurement's
  // uncertainty, half the round trip, taken off) the node owns no shard
  // (it would fire early, or late); past a tenth of it, it warns. 0: not
  // checked.
  std::chrono::milliseconds max_clock_offset{std::chrono::seconds(1)};
  // Unix ms of this node's wall clock; the system's when empty (tests).
  std::function<std::int64_t()> wall_ms;
};

// "node_id#instance": who owns a lease, who announced a change.
std::string LeaseOwner(const std::string& node_id, const std::string& instance);
// A new random instance id (16 hex digits).
std::string NewInstanceId();

// What the node does as its shards come and go. All run on the lease
// thread and must be quick.
struct LeaseCallbacks {
  std::function<void(const std::vector<int>&)> acquired;
  std::function<void(const std::vector<int>&)> lost;  // taken, or expired unrenewed
  // To be given back: stop firing them (their leases are still renewed
  // until their attempts in flight are done).
  std::function<void(const std::vector<int>&)> releasing;
  // Attempts in flight of these shards.
  std::function<std::size_t(const std::vector<int>&)> in_flight;
};

// Each node heartbeats a row in tickwheel_nodes; the fair share is the shard
// count over the live nodes, rounded up. A lease is (owner, epoch, expires
// at, by the database's clock); acquiring one raises its epoch, so writes
// fenced by the old epoch fail (store/shard_fence.h). The new epoch is one
// more than the row's, or the database's clock in microseconds if that is
// larger: epochs never repeat, even after the database is restored from a
// backup taken before later epochs were handed out (a node still holding
// one of those, paused or with a node id used twice, cannot match a new
// lease; docs/operations.md, "Backing up the cluster"). Locally a lease
// counts as held only until the lease duration after the renewal that last
// reached the database began: then the node stops firing those shards, no
// later than the database would let another node start. Extra shards (a
// node joined) are given back in two steps that never hold up renewals:
// stop firing them, then release them once their attempts in flight are
// done. A failed round is tried again after a short pause, never in a spin.
//
// Thread safety: EpochOf, owned and the counters from any thread; Start,
// Nudge and Stop from the owner.
class LeaseManager final : public ShardFence {
 public:
  LeaseManager(LeaseOptions options, LeaseCallbacks callbacks);
  ~LeaseManager() override;  // Stop(false)

  // Registers this process as node_id in tickwheel_nodes (before Start). If
  // another process holds that id with a live heartbeat, waits up to one
  // lease for it to lapse (a crashed predecessor's does); if it is still
  // renewed then, another process runs as this node: kInvalidArgument
  // "node_id_in_use", saying which. kUnavailable if the database cannot be
  // reached.
  Status ClaimNodeId();

  // Starts the lease thread over `shards` shards.
  void Start(int shards);
  // Looks for shards to take now (another node handed some over).
  void Nudge();
  // Takes no more shards (the node is draining); renews and gives back.
  void StopAcquiring();
  // Stops renewing. With `hand_over`, first tells `releasing` about every
  // owned shard, gives the leases back and leaves the live nodes, so the
  // others take over at once. Idempotent.
  void Stop(bool hand_over);

  std::optional<std::int64_t> EpochOf(int shard) const override;
  std::vector<int> owned() const;
  // Leases held and renewed in time.
  bool holds_leases() const;

  std::uint64_t renewals() const { return renewals_.load(); }
  std::uint64_t lost_leases() const { return lost_.load(); }
  std::uint64_t acquired_leases() const { return acquired_.load(); }
  std::uint64_t released_leases() const { return released_.load(); }
  // This node's wall clock minus the database's, at the last heartbeat
  // (ms); nullopt before the first.
  std::optional<std::int64_t> clock_offset_ms() const;
  // False while the offset is past max_clock_offset (no shard is owned).
  bool clock_ok() const { return clock_ok_.load(); }
  // False while another process holds this node id (found at a heartbeat).
  bool identity_ok() const { return identity_ok_.load(); }
  const std::string& owner() const { return owner_; }

 private:
  using SteadyTime = std::chrono::steady_clock::time_point;

  void Loop();
  // One round: heartbeat and renew (when due), then give back extras or
  // take a fair share. False if the database could not be reached.
  bool Round(PgConnection& c, bool renew);
  bool Renew(PgConnection& c);
  bool Rebalance(PgConnection& c);
  // Starts giving `shards` back (stops firing them).
  void BeginRelease(const std::vector<int>& shards);
  // Releases the shards being given back whose attempts are done (or whose
  // wait is over), or all of them.
  void ReleaseReady(PgConnection& c, bool all);
  void Release(PgConnection& c, const std::vector<int>& shards);
  // Drops what expired locally (no renewal reached the database in time).
  void ExpireLocally();
  void Lose(const std::vector<int>& shards);
  // Judges the clock offset measured by a heartbeat.
  void CheckClock(std::int64_t offset_ms, std::int64_t uncertainty_ms);
  std::int64_t WallMs() const;

  const LeaseOptions options_;
  const LeaseCallbacks callbacks_;
  const std::string owner_;  // LeaseOwner(node_id, instance)
  int shards_ = 0;

  mutable internal::Mutex mutex_;
  internal::CondVar cv_;
  std::map<int, std::int64_t> epochs_ TW_GUARDED_BY(mutex_);  // owned shard -> epoch
  // Owned shards being given back -> when to stop waiting for their attempts.
  std::map<int, SteadyTime> releasing_ TW_GUARDED_BY(mutex_);
  SteadyTime valid_until_ TW_GUARDED_BY(mutex_);
  bool stop_ TW_GUARDED_BY(mutex_) = false;
  bool nudged_ TW_GUARDED_BY(mutex_) = false;
  bool acquiring_ TW_GUARDED_BY(mutex_) = true;
  bool stopped_ = false;  // Stop ran (owner thread only)

  std::atomic<std::uint64_t> renewals_{0};
  std::atomic<std::uint64_t> lost_{0};
  std::atomic<std::uint64_t> acquired_{0};
  std::atomic<std::uint64_t> released_{0};
  std::atomic<bool> clock_ok_{true};
  std::atomic<bool> identity_ok_{true};
  std::atomic<bool> offset_known_{false};
  std::atomic<std::int64_t> clock_offset_ms_{0};
  bool clock_warned_ = false;  // the lease thread's: warned in this streak
  std::unique_ptr<PgConnection> conn_;  // the lease thread's, kept across Stop
  std::string last_error_;              // the lease thread's: why its last round failed
  std::thread thread_;
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_CLUSTER_LEASE_MANAGER_H_
