// SPDX-License-Identifier: Apache-2.0
#include "cluster/lease_manager.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>

#include "store/pg_connection.h"

namespace tickwheel::server {
namespace {

std::string Ms(std::chrono::milliseconds d) { return std::to_string(d.count()); }

std::vector<std::int64_t> AsInt64(const std::vector<int>& v) { return {v.begin(), v.end()}; }

constexpr char kLeaseChannel[] = "tickwheel_leases";

}  // namespace

std::string LeaseOwner(const std::string& node_id, const std::string& instance) {
  return node_id + "#" + instance;
}

std::string NewInstanceId() {
  std::random_device random;
  const std::uint64_t n = (static_cast<std::uint64_t>(random()) << 32) ^ random();
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(n));
  return hex;
}

LeaseManager::LeaseManager(LeaseOptions options, LeaseCallbacks callbacks)
    : options_(std::move(options)),
      callbacks_(std::move(callbacks)),
      owner_(LeaseOwner(options_.node_id, options_.instance)) {}

std::int64_t LeaseManager::WallMs() const {
  if (options_.wall_ms) return options_.wall_ms();
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::optional<std::int64_t> LeaseManager::clock_offset_ms() const {
  if (!offset_known_.load()) return std::nullopt;
  return clock_offset_ms_.load();
}

Status LeaseManager::ClaimNodeId() {
  Result<std::unique_ptr<PgConnection>> c = PgConnection::Connect(options_.postgres);
  if (!c.ok()) return c.status();
  PgConnection& conn = **c;
  // A predecessor that crashed stops renewing: its heartbeat lapses within
  // a lease. One still renewed after that is another live process.
  const auto give_up = std::chrono::steady_clock::now() + options_.lease + std::chrono::seconds(1);
  bool waiting = false;
  for (;;) {
    Result<PgResult> r = conn.Exec(
        "INSERT INTO tickwheel_nodes (node_id, instance, expires_at) "
        "VALUES ($1, $2, now() + $3::bigint * interval '1 millisecond') "
        "ON CONFLICT (node_id) DO UPDATE SET instance = excluded.instance, "
        "expires_at = excluded.expires_at, started_at = now(), clock_offset_ms = NULL "
        "WHERE tickwheel_nodes.expires_at < now() OR tickwheel_nodes.instance = excluded.instance "
        "RETURNING 1",
        {options_.node_id, options_.instance, Ms(options_.lease)});
    if (!r.ok()) return r.status();
    if (r->rows() == 1) return Status::Ok();
    Result<PgResult> holder = conn.Exec(
        "SELECT instance, to_char(started_at, 'YYYY-MM-DD HH24:MI:SS TZ') FROM tickwheel_nodes "
        "WHERE node_id = $1",
        {options_.node_id});
    const std::string who =
        holder.ok() && holder->rows() == 1
            ? "instance " + std::string(holder->Text(0, 0)) + ", started " + std::string(holder->Text(0, 1))
            : "another instance";
    if (std::chrono::steady_clock::now() >= give_up) {
      return Status::Invalid(
          "node_id_in_use",
          "another live process runs as node id \"" + options_.node_id + "\" (" + who +
              "; its heartbeat is renewed): give each node its own --node-id (the default is "
              "the host name and the --listen port)");
    }
    if (!waiting) {
      waiting = true;
      spdlog::warn("node id \"{}\" is held by {}; waiting up to {} ms for its heartbeat to lapse "
                   "(a crashed predecessor's does)",
                   options_.node_id, who, options_.lease.count() + 1000);
    }
    std::this_thread::sleep_for(std::min<std::chrono::milliseconds>(options_.lease / 4,
                                                                    std::chrono::milliseconds(500)));
  }
}

void LeaseManager::CheckClock(std::int64_t offset_ms, std::int64_t uncertainty_ms) {
  clock_offset_ms_.store(offset_ms);
  offset_known_.store(true);
  const std::int64_t max = options_.max_clock_offset.count();
  if (max <= 0) return;
  // What the offset is at least, whatever the measurement's error.
  const std::int64_t certain = std::max<std::int64_t>(0, std::abs(offset_ms) - uncertainty_ms);
  const char* side = offset_ms > 0 ? "ahead of" : "behind";
  if (certain > max) {
    if (clock_ok_.exchange(false)) {
      spdlog::error("clock: this node's wall clock is {} ms {} the database's (more than "
                    "--max-clock-offset {} ms): it would fire timers early or late, so it gives "
                    "up its shards and takes none until its clock is fixed (NTP)",
                    std::abs(offset_ms), side, max);
    }
    return;
  }
  if (!clock_ok_.exchange(true)) {
    spdlog::info("clock: this node's wall clock is within {} ms of the database's again; it "
                 "takes shards again",
                 std::abs(offset_ms));
  }
  if (certain > max / 10) {
    if (!clock_warned_) {
      spdlog::warn("clock: this node's wall clock is {} ms {} the database's; timers it fires "
                   "may be that early or late (past --max-clock-offset {} ms it gives up its "
                   "shards)",
                   std::abs(offset_ms), side, max);
    }
    clock_warned_ = true;
  } else {
    clock_warned_ = false;
  }
}

LeaseManager::~LeaseManager() { Stop(false); }

void LeaseManager::Start(int shards) {
  shards_ = shards;
  thread_ = std::thread([this] { Loop(); });
}

void LeaseManager::Nudge() {
  internal::MutexLock lock(mutex_);
  nudged_ = true;
  cv_.Signal();
}

std::optional<std::int64_t> LeaseManager::EpochOf(int shard) const {
  // The database judges expiry (in the fenced write's transaction); a lease
  // only late to be confirmed locally still carries its epoch.
  internal::MutexLock lock(mutex_);
  auto it = epochs_.find(shard);
  if (it == epochs_.end()) return std::nullopt;
  return it->second;
}

std::vector<int> LeaseManager::owned() const {
  internal::MutexLock lock(mutex_);
  std::vector<int> out;
  for (const auto& [shard, epoch] : epochs_) out.push_back(shard);
  return out;
}

bool LeaseManager::holds_leases() const {
  internal::MutexLock lock(mutex_);
  return !epochs_.empty() && std::chrono::steady_clock::now() < valid_until_;
}

void LeaseManager::Lose(const std::vector<int>& shards) {
  if (shards.empty()) return;
  {
    internal::MutexLock lock(mutex_);
    for (int s : shards) {
      epochs_.erase(s);
      releasing_.erase(s);
    }
  }
  lost_.fetch_add(shards.size());
  spdlog::warn("lost the leases of {} shards (taken by another node, or not renewed in time)",
               shards.size());
  if (callbacks_.lost) callbacks_.lost(shards);
}

void LeaseManager::ExpireLocally() {
  std::vector<int> expired;
  {
    internal::MutexLock lock(mutex_);
    if (epochs_.empty() || std::chrono::steady_clock::now() < valid_until_) return;
    for (const auto& [shard, epoch] : epochs_) expired.push_back(shard);
  }
  Lose(expired);
}

bool LeaseManager::Renew(PgConnection& c) {
  const auto started = std::chrono::steady_clock::now();
  // The heartbeat, only as this process (instance), and the database's
  // clock to compare this node's with.
  const std::int64_t before_ms = WallMs();
  const std::optional<std::int64_t> offset = clock_offset_ms();
  Result<PgResult> beat = c.Exec(
      "INSERT INTO tickwheel_nodes (node_id, instance, expires_at, clock_offset_ms, accepting) "
      "VALUES ($1, $2, now() + $3::bigint * interval '1 millisecond', $4, $5) "
      "ON CONFLICT (node_id) DO UPDATE SET instance = excluded.instance, "
      "expires_at = excluded.expires_at, clock_offset_ms = excluded.clock_offset_ms, "
      "accepting = excluded.accepting "
      "WHERE tickwheel_nodes.instance = excluded.instance OR tickwheel_nodes.expires_at < now() "
      "RETURNING (extract(epoch from clock_timestamp()) * 1000)::bigint",
      {options_.node_id, options_.instance, Ms(options_.lease),
       offset ? std::optional<std::string>(std::to_string(*offset)) : std::nullopt,
       clock_ok_.load() && identity_ok_.load() ? "true" : "false"});
  const std::int64_t after_ms = WallMs();
  if (!beat.ok()) {
    last_error_ = "heartbeat: " + beat.status().message();
    return false;
  }
  if (beat->rows() == 0) {
    // Another process took this node id (ours lapsed meanwhile).
    if (identity_ok_.exchange(false)) {
      spdlog::error("node id \"{}\" is now held by another process: this one gives up its "
                    "shards and takes none while that one runs (give each node its own "
                    "--node-id)",
                    options_.node_id);
    }
  } else {
    const bool accepting = clock_ok_.load() && identity_ok_.load();
    if (!identity_ok_.exchange(true)) {
      spdlog::info("node id \"{}\" is this process's again", options_.node_id);
    }
    CheckClock((before_ms + after_ms) / 2 - beat->Int(0, 0), (after_ms - before_ms + 1) / 2);
    if (accepting != clock_ok_.load()) {
      // Tell the others now (not at the next heartbeat) whether this node
      // counts in their fair share.
      (void)c.Exec("UPDATE tickwheel_nodes SET accepting = $3 WHERE node_id = $1 AND instance = $2",
                   {options_.node_id, options_.instance, clock_ok_.load() ? "true" : "false"});
    }
  }
  std::map<int, std::int64_t> mine;
  {
    internal::MutexLock lock(mutex_);
    mine = epochs_;
  }
  std::vector<int> shards;
  for (const auto& [shard, epoch] : mine) shards.push_back(shard);
  std::vector<int> lost;
  if (!shards.empty()) {
    Result<PgResult> r = c.Exec(
        "UPDATE tickwheel_shard_leases SET expires_at = now() + $3::bigint * interval '1 millisecond' "
        "WHERE shard IN (SELECT shard FROM tickwheel_shard_leases WHERE owner = $1 "
        "AND shard = ANY($2::int[]) AND expires_at > now() ORDER BY shard FOR UPDATE) "
        "RETURNING shard, epoch",
        {owner_, PgBigintArray(AsInt64(shards)), Ms(options_.lease)});
    if (!r.ok()) {
      last_error_ = "renewal: " + r.status().message();
      return false;
    }
    std::map<int, std::int64_t> renewed;
    for (int i = 0; i < r->rows(); ++i) renewed[static_cast<int>(r->Int(i, 0))] = r->Int(i, 1);
    for (const auto& [shard, epoch] : mine) {
      auto it = renewed.find(shard);
      if (it == renewed.end() || it->second != epoch) lost.push_back(shard);
    }
  }
  {
    internal::MutexLock lock(mutex_);
    valid_until_ = started + options_.lease;
  }
  renewals_.fetch_add(1);
  Lose(lost);
  return true;
}

void LeaseManager::BeginRelease(const std::vector<int>& shards) {
  if (shards.empty()) return;
  {
    internal::MutexLock lock(mutex_);
    const SteadyTime give_up = std::chrono::steady_clock::now() + options_.release_wait;
    for (int s : shards) releasing_.emplace(s, give_up);
  }
  if (callbacks_.releasing) callbacks_.releasing(shards);
}

void LeaseManager::ReleaseReady(PgConnection& c, bool all) {
  std::vector<int> ready;
  {
    internal::MutexLock lock(mutex_);
    const SteadyTime now = std::chrono::steady_clock::now();
    for (const auto& [shard, give_up] : releasing_) {
      if (all || now >= give_up) ready.push_back(shard);
    }
    if (!all && ready.size() < releasing_.size()) {
      // The others wait for their attempts in flight, all together.
      std::vector<int> waiting;
      for (const auto& [shard, give_up] : releasing_) {
        if (now < give_up) waiting.push_back(shard);
      }
      lock.Unlock();
      const bool done = !callbacks_.in_flight || callbacks_.in_flight(waiting) == 0;
      lock.Lock();
      if (done) ready.insert(ready.end(), waiting.begin(), waiting.end());
    }
  }
  Release(c, ready);
}

void LeaseManager::Release(PgConnection& c, const std::vector<int>& shards) {
  if (shards.empty()) return;
  std::vector<std::int64_t> epochs;
  {
    internal::MutexLock lock(mutex_);
    for (int s : shards) epochs.push_back(epochs_.count(s) ? epochs_[s] : -1);
  }
  (void)c.Exec(
      "UPDATE tickwheel_shard_leases SET owner = NULL, expires_at = 'epoch' "
      "WHERE shard IN (SELECT l.shard FROM tickwheel_shard_leases l "
      "JOIN unnest($2::int[], $3::bigint[]) AS m(shard, epoch) "
      "ON l.shard = m.shard AND l.epoch = m.epoch WHERE l.owner = $1 ORDER BY l.shard FOR UPDATE OF l)",
      {owner_, PgBigintArray(AsInt64(shards)), PgBigintArray(epochs)});
  {
    internal::MutexLock lock(mutex_);
    for (int s : shards) {
      epochs_.erase(s);
      releasing_.erase(s);
    }
  }
  released_.fetch_add(shards.size());
  (void)c.Exec(std::string("SELECT pg_notify('") + kLeaseChannel + "', $1)", {owner_});
  spdlog::info("handed {} shards over", shards.size());
}

bool LeaseManager::Rebalance(PgConnection& c) {
  // The live nodes that take shards: one whose clock is off does not.
  Result<PgResult> live =
      c.Exec("SELECT count(*) FROM tickwheel_nodes WHERE expires_at > now() AND accepting");
  if (!live.ok()) {
    last_error_ = "counting nodes: " + live.status().message();
    return false;
  }
  const std::int64_t nodes = std::max<std::int64_t>(1, live->Int(0, 0));
  const auto fair = static_cast<std::size_t>((shards_ + nodes - 1) / nodes);
  std::vector<int> keeping;  // owned, not being given back
  bool acquiring = false;
  {
    internal::MutexLock lock(mutex_);
    for (const auto& [shard, epoch] : epochs_) {
      if (!releasing_.count(shard)) keeping.push_back(shard);
    }
    acquiring = acquiring_;
  }
  if (!clock_ok_.load() || !identity_ok_.load()) {
    // Its clock is off, or another process is this node: it owns nothing.
    BeginRelease(keeping);
    return true;
  }
  if (keeping.size() > fair) {  // nodes joined: give the extras back
    BeginRelease(std::vector<int>(keeping.end() - static_cast<std::ptrdiff_t>(keeping.size() - fair),
                                  keeping.end()));
    return true;
  }
  if (keeping.size() >= fair || !acquiring) return true;
  const std::vector<int>& owned_now = keeping;
  const auto started = std::chrono::steady_clock::now();
  Result<PgResult> taken = c.Exec(
      "UPDATE tickwheel_shard_leases SET owner = $1, "
      "epoch = greatest(epoch + 1, (extract(epoch from clock_timestamp()) * 1000000)::bigint), "
      "expires_at = now() + $3::bigint * interval '1 millisecond' "
      "WHERE shard IN (SELECT shard FROM tickwheel_shard_leases "
      "WHERE owner IS NULL OR expires_at < now() ORDER BY random() LIMIT $2 "
      "FOR UPDATE SKIP LOCKED) RETURNING shard, epoch",
      {owner_, std::to_string(fair - owned_now.size()), Ms(options_.lease)});
  if (!taken.ok()) {
    last_error_ = "taking shards: " + taken.status().message();
    return false;
  }
  if (taken->rows() == 0) return true;
  std::vector<int> acquired;
  {
    internal::MutexLock lock(mutex_);
    if (epochs_.empty()) valid_until_ = started + options_.lease;
    for (int i = 0; i < taken->rows(); ++i) {
      const int shard = static_cast<int>(taken->Int(i, 0));
      epochs_[shard] = taken->Int(i, 1);
      acquired.push_back(shard);
    }
  }
  acquired_.fetch_add(acquired.size());
  spdlog::info("took the leases of {} shards (now {})", acquired.size(), owned().size());
  if (callbacks_.acquired) callbacks_.acquired(acquired);
  return true;
}

bool LeaseManager::Round(PgConnection& c, bool renew) {
  if (renew && !Renew(c)) return false;
  ReleaseReady(c, /*all=*/false);
  return Rebalance(c);
}

void LeaseManager::StopAcquiring() {
  internal::MutexLock lock(mutex_);
  acquiring_ = false;
}

void LeaseManager::Loop() {
  const auto renew_every = options_.lease / 3;
  // After a failed round: at most this often, and the warning once a streak.
  const auto retry_every = std::min<std::chrono::milliseconds>(options_.scan, renew_every / 2);
  auto last_renew = std::chrono::steady_clock::now() - renew_every;  // due at once
  bool failing = false;
  for (;;) {
    {
      internal::MutexLock lock(mutex_);
      if (stop_) return;
    }
    if (!conn_ || !conn_->healthy()) {
      conn_.reset();
      Result<std::unique_ptr<PgConnection>> c = PgConnection::Connect(options_.postgres);
      if (c.ok()) {
        conn_ = std::move(*c);
      } else {
        last_error_ = c.status().message();
      }
    }
    const auto now = std::chrono::steady_clock::now();
    const bool renew_due = now - last_renew >= renew_every;
    bool ok = false;
    if (conn_) {
      ok = Round(*conn_, renew_due);
      if (ok && renew_due) last_renew = now;
      if (!ok) conn_.reset();  // leases hold until they expire; reconnect
    }
    if (!ok && !failing) {
      spdlog::warn("leases: {}; trying again every {} ms (leases hold until they expire)",
                   last_error_, retry_every.count());
    } else if (ok && failing) {
      spdlog::info("leases: the database is reachable again");
    }
    failing = !ok;
    ExpireLocally();
    internal::MutexLock lock(mutex_);
    auto until = std::min(std::chrono::steady_clock::now() + options_.scan, last_renew + renew_every);
    if (failing) until = std::chrono::steady_clock::now() + retry_every;
    while (!stop_ && !nudged_ && cv_.WaitUntil(mutex_, until)) {
    }
    nudged_ = false;
  }
}

void LeaseManager::Stop(bool hand_over) {
  if (stopped_) return;
  stopped_ = true;
  {
    internal::MutexLock lock(mutex_);
    stop_ = true;
    cv_.Signal();
  }
  if (thread_.joinable()) thread_.join();
  if (!hand_over) return;
  if (!conn_ || !conn_->healthy()) {
    Result<std::unique_ptr<PgConnection>> c = PgConnection::Connect(options_.postgres);
    if (!c.ok()) return;  // the leases expire by themselves
    conn_ = std::move(*c);
  }
  // The node has drained: every shard goes at once.
  BeginRelease(owned());
  ReleaseReady(*conn_, /*all=*/true);
  // Only this process's heartbeat: another one running as this node id
  // keeps its own.
  (void)conn_->Exec("DELETE FROM tickwheel_nodes WHERE node_id = $1 AND instance = $2",
                    {options_.node_id, options_.instance});
  (void)conn_->Exec(std::string("SELECT pg_notify('") + kLeaseChannel + "', $1)", {owner_});
}

}  // namespace tickwheel::server
