// SPDX-License-Identifier: Apache-2.0
#include "scheduler/scheduler.h"

#include <algorithm>

namespace tickwheel::server {
namespace {

// The position just after `e`: ids are made of characters above '\x01'.
DueEntry After(const DueEntry& e) { return {e.due_ms, e.id + '\x01', ""}; }

// The position before every timer.
DueEntry BeforeAll() { return {INT64_MIN, "", ""}; }

}  // namespace

Scheduler::Scheduler(TimerStore& store, ServerClock& clock, SchedulerOptions options, Fire fire,
                     FlowRegistry* flows)
    : store_(store),
      clock_(clock),
      options_(options),
      fire_(std::move(fire)),
      sleeper_(clock.steady().NewSleeper()),
      wheel_(std::chrono::milliseconds(1), clock.steady().Now()),
      gate_(flows, FlowGate::Options{.window_cap = options.max_window_timers,
                                     .shared_budget = options.shared_flow_budget}) {}

Scheduler::~Scheduler() { Stop(); }

void Scheduler::Start() { thread_ = std::thread([this] { Loop(); }); }

void Scheduler::Stop() {
  {
    internal::MutexLock lock(mutex_);
    stop_ = true;
  }
  sleeper_->Wake();
  if (thread_.joinable()) thread_.join();
}

void Scheduler::Pause(bool paused) {
  {
    internal::MutexLock lock(mutex_);
    paused_ = paused;
  }
  sleeper_->Wake();
}

bool Scheduler::paused() const {
  internal::MutexLock lock(mutex_);
  return paused_;
}

void Scheduler::AddShards(const std::vector<int>& shards) {
  const std::int64_t now_ms = clock_.WallMs();
  {
    internal::MutexLock lock(mutex_);
    for (int s : shards) {
      if (shards_.insert(s).second) {
        shards_to_load_.push_back(s);
        owned_since_[s] = now_ms;
      }
    }
  }
  sleeper_->Wake();
}

void Scheduler::RemoveShards(const std::vector<int>& shards) {
  internal::MutexLock lock(mutex_);
  for (int s : shards) {
    shards_.erase(s);
    owned_since_.erase(s);
  }
  std::erase_if(shards_to_load_, [&](int s) {
    mutex_.AssertHeld();
    return !shards_.count(s);
  });
  for (auto it = entries_.begin(); it != entries_.end();) {
    auto next = std::next(it);
    if (!Owned(it->first)) {
      if (it->second.in_flight) {
        it->second.rearm.reset();  // its outcome is fenced; it is not ours
      } else {
        EraseLocked(it);
      }
    }
    it = next;
  }
}

void Scheduler::ReloadShards() {
  {
    internal::MutexLock lock(mutex_);
    shards_to_load_.assign(shards_.begin(), shards_.end());
  }
  sleeper_->Wake();
}

std::size_t Scheduler::InFlightOf(const std::vector<int>& shards) const {
  internal::MutexLock lock(mutex_);
  std::size_t n = 0;
  for (const auto& [id, entry] : entries_) {
    if (entry.in_flight &&
        std::find(shards.begin(), shards.end(), store_.ShardOf(id)) != shards.end()) {
      ++n;
    }
  }
  return n;
}

bool Scheduler::OwnsShardOf(const std::string& id) const {
  internal::MutexLock lock(mutex_);
  return Owned(id);
}

std::int64_t Scheduler::OwnedSinceMs(const std::string& id) const {
  const int shard = store_.ShardOf(id);
  internal::MutexLock lock(mutex_);
  auto it = owned_since_.find(shard);
  return it != owned_since_.end() ? it->second : clock_.WallMs();
}

std::vector<int> Scheduler::shards() const {
  internal::MutexLock lock(mutex_);
  return {shards_.begin(), shards_.end()};
}

bool Scheduler::Owned(const std::string& id) const {
  return shards_.count(store_.ShardOf(id)) > 0;
}

bool Scheduler::InWindow(std::int64_t due_ms, const std::string& id) const {
  return due_ms < window_end_.due_ms || (due_ms == window_end_.due_ms && id < window_end_.id);
}

void Scheduler::PlaceLocked(const std::string& id, Entry& entry, TimePoint deadline) {
  if (entry.timer == TimerId() || !wheel_.Reschedule(entry.timer, deadline)) {
    entry.timer = wheel_.Schedule(deadline, id);
  }
  if (deadline < sleeping_until_) sleeper_->Wake();
}

void Scheduler::EraseLocked(Entries::iterator it) {
  Entry& entry = it->second;
  if (entry.timer != TimerId()) wheel_.Cancel(entry.timer);
  if (entry.waiting) gate_.Unready(*entry.flow, {entry.due_ms, it->first, ""});
  --entry.flow->loaded;
  entries_.erase(it);
  WakeForRoomLocked();
}

void Scheduler::Defer(Flow& flow, const DueEntry& from) {
  if (!flow.deferred && !flow.refilling && flow.deferred_since_ms == 0) {
    flow.deferred_since_ms = clock_.WallMs();
  }
  std::optional<DueEntry>& at = flow.refilling ? flow.deferred_in_refill : flow.deferred;
  if (!at || from < *at) at = DueEntry{from.due_ms, from.id, ""};
  if (!flow.refilling) deferred_.insert(&flow);
}

bool Scheduler::Admit(Flow& flow, const DueEntry& e) {
  const std::optional<DueEntry>& at = flow.refilling ? flow.deferred_in_refill : flow.deferred;
  if (at && !(e < *at)) return false;  // in the store, for the flow's own refill
  if (flow.loaded >= gate_.Quota(flow)) {
    Defer(flow, e);
    return false;
  }
  return true;
}

Scheduler::Entries::iterator Scheduler::Insert(const std::string& id, std::int64_t due_ms,
                                               Flow& flow) {
  auto it = entries_.emplace(id, Entry{}).first;
  it->second.due_ms = due_ms;
  it->second.flow = &flow;
  ++flow.loaded;
  return it;
}

void Scheduler::ArmLocked(const std::string& id, std::int64_t due_ms, const std::string& flow) {
  auto it = entries_.find(id);
  if (it != entries_.end() && it->second.in_flight) {
    it->second.rearm = due_ms;
    return;
  }
  if (!InWindow(due_ms, id)) {  // a later refill loads it
    if (it != entries_.end()) EraseLocked(it);
    return;
  }
  if (it == entries_.end()) {
    if (entries_.size() >= options_.max_window_timers) {
      // Full: the window now ends before this timer instead.
      window_end_ = {due_ms, id, ""};
      return;
    }
    Flow& f = gate_.Intern(flow, clock_.steady().Now(), clock_.WallMs());
    if (!Admit(f, {due_ms, id, ""})) return;  // its flow's refill loads it
    it = Insert(id, due_ms, f);
  } else if (it->second.waiting) {  // rescheduled while waiting for its flow
    gate_.Unready(*it->second.flow, {it->second.due_ms, id, ""});
    it->second.waiting = false;
  }
  it->second.due_ms = due_ms;
  it->second.held_since_ms = 0;
  PlaceLocked(id, it->second, clock_.SteadyAt(due_ms));
}

void Scheduler::OnDueChange(const std::string& id, std::optional<std::int64_t> due_ms,
                            const std::string& flow) {
  internal::MutexLock lock(mutex_);
  if (!Owned(id)) return;
  if (due_ms) {
    ArmLocked(id, *due_ms, flow);
    return;
  }
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  if (it->second.in_flight) {
    it->second.rearm.reset();
  } else {
    EraseLocked(it);
  }
}

void Scheduler::WakeForRoomLocked() {
  // A window cut short by the cap is refilled once room opens: wake the
  // loop when the map falls under the refill threshold.
  if (entries_.size() + 1 == options_.max_window_timers * 3 / 4) sleeper_->Wake();
}

void Scheduler::FreeSlot(Entry& entry, const FlowSignal& signal) {
  if (!entry.slot) return;
  entry.slot = false;
  const bool waiting = !entry.flow->waiting.empty();
  gate_.Ended(*entry.flow, signal, clock_.steady().Now(), clock_.WallMs());
  if (waiting) sleeper_->Wake();
}

std::vector<Duration> Scheduler::StartDelays(const std::vector<std::string>& ids) {
  std::vector<Duration> delays(ids.size(), Duration(0));
  internal::MutexLock lock(mutex_);
  const TimePoint now = clock_.steady().Now();
  for (std::size_t i = 0; i < ids.size(); ++i) {
    auto it = entries_.find(ids[i]);
    if (it == entries_.end() || !it->second.slot) continue;
    delays[i] = gate_.StartAt(*it->second.flow, now) - now;
  }
  return delays;
}

void Scheduler::AttemptEnded(const std::string& id, const FlowSignal& signal) {
  internal::MutexLock lock(mutex_);
  auto it = entries_.find(id);
  if (it == entries_.end() || !it->second.in_flight) return;
  FreeSlot(it->second, signal);
}

void Scheduler::Finish(const std::string& id) {
  internal::MutexLock lock(mutex_);
  auto it = entries_.find(id);
  if (it == entries_.end() || !it->second.in_flight) return;
  --in_flight_;
  Entry& entry = it->second;
  FreeSlot(entry, {});
  entry.in_flight = false;
  entry.timer = TimerId();
  const std::optional<std::int64_t> rearm = entry.rearm;
  entry.rearm.reset();
  const std::string flow = entry.flow->key;
  --entry.flow->loaded;
  if (entry.flow->deferred && entry.flow->loaded < gate_.Quota(*entry.flow) / 2) {
    sleeper_->Wake();  // its turn to be refilled
  }
  entries_.erase(it);
  if (rearm && Owned(id)) {
    ArmLocked(id, *rearm, flow);  // re-armed as if new (the window may have moved)
  } else {
    WakeForRoomLocked();
  }
}

void Scheduler::FinishAndRetryIn(const std::string& id, std::int64_t due_ms,
                                 std::chrono::milliseconds delay) {
  internal::MutexLock lock(mutex_);
  auto it = entries_.find(id);
  if (it == entries_.end() || !it->second.in_flight) return;
  --in_flight_;
  Entry& entry = it->second;
  FreeSlot(entry, {});
  entry.in_flight = false;
  entry.timer = TimerId();
  if (entry.rearm || !Owned(id)) {  // the store moved it meanwhile, or not ours
    const std::optional<std::int64_t> rearm = entry.rearm;
    const std::string flow = entry.flow->key;
    --entry.flow->loaded;
    entries_.erase(it);
    if (rearm && Owned(id)) ArmLocked(id, *rearm, flow);
    return;
  }
  entry.due_ms = due_ms;
  PlaceLocked(id, entry, std::max(clock_.SteadyAt(due_ms), clock_.steady().Now() + delay));
}

void Scheduler::Nudge() { sleeper_->Wake(); }

void Scheduler::SetFlowShare(const std::string& flow, std::optional<FlowLimits> share,
                             TimePoint until) {
  {
    internal::MutexLock lock(mutex_);
    gate_.SetShare(flow, share, until, clock_.steady().Now(), clock_.WallMs());
  }
  sleeper_->Wake();
}

std::vector<FlowStats> Scheduler::Flows() const {
  internal::MutexLock lock(mutex_);
  // Stats only reads, but brings the limiters' 429 recovery up to now.
  return const_cast<FlowGate&>(gate_).Stats(clock_.steady().Now(), clock_.WallMs());
}

FlowStats Scheduler::RetiredFlows() const {
  internal::MutexLock lock(mutex_);
  return gate_.Retired();
}

std::size_t Scheduler::loaded() const {
  internal::MutexLock lock(mutex_);
  return entries_.size();
}

std::size_t Scheduler::in_flight() const {
  internal::MutexLock lock(mutex_);
  return in_flight_;
}

DueEntry Scheduler::window_end() const {
  internal::MutexLock lock(mutex_);
  return window_end_;
}

std::uint64_t Scheduler::refills() const {
  internal::MutexLock lock(mutex_);
  return refills_;
}

std::uint64_t Scheduler::swept() const {
  internal::MutexLock lock(mutex_);
  return swept_;
}

bool Scheduler::Load(const std::vector<int>& shards, const DueEntry& from,
                     std::int64_t to_ms, std::size_t* loaded) {
  std::size_t budget;
  FlowSet skip;
  {
    internal::MutexLock lock(mutex_);
    budget = options_.max_window_timers > entries_.size()
                 ? options_.max_window_timers - entries_.size()
                 : 0;
    // Deferred flows stay deferred until this thread refills them, so what
    // the scan skips of theirs is theirs to load.
    for (const Flow* f : deferred_) skip.insert(f->key);
  }
  if (budget == 0) return true;
  Result<DueScan> scan = store_.ScanDue(shards, from, to_ms, budget, skip.empty() ? nullptr : &skip);
  internal::MutexLock lock(mutex_);
  if (!scan.ok()) {
    // Nothing of it is loaded: the window ends where the load began, and
    // the loop tries again a little later (never in a spin).
    window_end_ = std::min(window_end_, from);
    retry_load_at_ = clock_.steady().Now() + kLoadRetryDelay;
    return false;
  }
  std::vector<DueEntry>& due = scan->entries;
  // Capped: what was not read is beyond the window.
  if (due.size() >= budget && !due.empty()) {
    window_end_ = std::min(window_end_, After(due.back()));
  } else if (scan->resume) {  // it looked at enough: the next refill goes on from there
    window_end_ = std::min(window_end_, *scan->resume);
  }
  const TimePoint now = clock_.steady().Now();
  const std::int64_t now_ms = clock_.WallMs();
  for (DueEntry& e : due) {
    if (!InWindow(e.due_ms, e.id) || !Owned(e.id)) continue;
    if (entries_.count(e.id)) continue;  // armed meanwhile: that is newer
    if (entries_.size() >= options_.max_window_timers) {  // armed meanwhile, full
      window_end_ = std::min(window_end_, DueEntry{e.due_ms, e.id, ""});
      break;
    }
    Flow& flow = gate_.Intern(e.flow, now, now_ms);
    if (!Admit(flow, e)) continue;
    auto it = Insert(e.id, e.due_ms, flow);
    PlaceLocked(e.id, it->second, clock_.SteadyAt(e.due_ms));
    if (loaded) ++*loaded;
  }
  return true;
}

Scheduler::Flow* Scheduler::FlowToRefill() {
  if (entries_.size() >= options_.max_window_timers / 2) return nullptr;
  if (clock_.steady().Now() < flow_refill_retry_at_) return nullptr;
  for (Flow* f : deferred_) {
    // Under half its quota (a paused flow's is 0: never).
    const std::size_t quota = gate_.Quota(*f);
    if (quota > 0 && f->loaded < std::max<std::size_t>(1, quota / 2)) return f;
  }
  return nullptr;
}

void Scheduler::RefillFlow(Flow& flow) {
  DueEntry from;
  DueEntry end;
  std::size_t limit;
  std::vector<int> shards;
  {
    internal::MutexLock lock(mutex_);
    from = *flow.deferred;
    flow.deferred.reset();
    deferred_.erase(&flow);
    flow.refilling = true;
    flow.deferred_in_refill.reset();
    end = window_end_;
    const std::size_t quota = gate_.Quota(flow);
    limit = std::max<std::size_t>(1, quota > flow.loaded ? quota - flow.loaded : 0);
    limit = std::min(limit, options_.max_window_timers - entries_.size());
    shards.assign(shards_.begin(), shards_.end());
    ++refills_;
  }
  Result<DueScan> scan = store_.ScanFlowDue(flow.key, shards, from, end.due_ms + 1, limit);
  internal::MutexLock lock(mutex_);
  flow.refilling = false;
  std::optional<DueEntry> next = flow.deferred_in_refill;
  flow.deferred_in_refill.reset();
  if (!scan.ok()) {
    flow_refill_retry_at_ = clock_.steady().Now() + kLoadRetryDelay;
    Defer(flow, from);
    if (next) Defer(flow, *next);
    return;
  }
  const std::vector<DueEntry>& due = scan->entries;
  const std::int64_t now_ms = clock_.WallMs();
  bool beyond = false;
  for (const DueEntry& e : due) {
    if (!InWindow(e.due_ms, e.id)) {  // past the window: the window's scans see it
      beyond = true;
      break;
    }
    if (!Owned(e.id) || entries_.count(e.id)) continue;
    if (entries_.size() >= options_.max_window_timers || (next && !(e < *next))) {
      Defer(flow, e);
      beyond = true;
      break;
    }
    auto it = Insert(e.id, e.due_ms, flow);
    // Kept out of the window past its due time: waiting for its flow since
    // then (or since its flow began keeping timers in the store, if later).
    if (e.due_ms < now_ms) {
      it->second.held_since_ms = std::max(e.due_ms, flow.deferred_since_ms);
    }
    PlaceLocked(e.id, it->second, clock_.SteadyAt(e.due_ms));
  }
  if (!beyond && due.size() >= limit && !due.empty()) {
    Defer(flow, After(due.back()));
  } else if (!beyond && scan->resume) {  // it looked at enough: go on from there
    Defer(flow, *scan->resume);
  }
  if (next) Defer(flow, *next);
  if (!flow.deferred) flow.deferred_since_ms = 0;  // all of it is loaded again
}

void Scheduler::Evict(Flow& flow) {
  const std::size_t quota = gate_.Quota(flow);
  std::vector<DueEntry> held;
  for (const auto& [id, entry] : entries_) {
    if (entry.flow == &flow && !entry.in_flight) held.push_back({entry.due_ms, id, ""});
  }
  const std::size_t in_flight = flow.loaded - held.size();
  const std::size_t keep = quota > in_flight ? quota - in_flight : 0;
  if (held.size() <= keep) return;
  std::sort(held.begin(), held.end());
  Defer(flow, held[keep]);
  for (std::size_t i = keep; i < held.size(); ++i) EraseLocked(entries_.find(held[i].id));
}

void Scheduler::Loop() {
  const std::int64_t window = options_.window.count();
  std::vector<FiredTimer> fired;
  std::vector<ReleasedEntry> released;
  internal::MutexLock lock(mutex_);
  next_collect_ = clock_.steady().Now() + kCollectEvery;
  while (!stop_) {
    const std::uint64_t token = sleeper_->token();
    if (!shards_to_load_.empty() && clock_.steady().Now() >= retry_load_at_) {
      // Newly owned shards: everything of theirs up to the window end.
      std::vector<int> shards;
      shards.swap(shards_to_load_);
      const DueEntry end = window_end_;
      lock.Unlock();
      const bool loaded = end.due_ms == INT64_MIN || Load(shards, BeforeAll(), end.due_ms + 1);
      lock.Lock();
      if (!loaded) {
        for (int s : shards) {
          if (shards_.count(s)) shards_to_load_.push_back(s);
        }
      }
      continue;
    }
    const std::int64_t now_ms = clock_.WallMs();
    const TimePoint steady_now = clock_.steady().Now();
    // Settings changed (here or on another node): new limits, and what a
    // smaller quota no longer lets a flow keep in memory goes back to the
    // store.
    for (Flow* f : gate_.Sync(steady_now, now_ms)) Evict(*f);
    const bool room = entries_.size() < options_.max_window_timers * 3 / 4 &&
                      steady_now >= retry_load_at_;
    const bool refill_due = window_end_.due_ms < now_ms + window / 2 && room && !shards_.empty();
    if (refills_ == 0 || refill_due) {
      // Writes committed from now on see the new end and arm themselves;
      // those committed before are visible to the scan.
      const DueEntry from = window_end_;
      const std::int64_t to_ms = std::max(now_ms + window, from.due_ms);
      window_end_ = {to_ms, "", ""};
      std::vector<int> shards(shards_.begin(), shards_.end());
      ++refills_;
      lock.Unlock();
      Load(shards, from, to_ms);
      lock.Lock();
      continue;
    }
    if (Flow* flow = shards_.empty() ? nullptr : FlowToRefill()) {
      lock.Unlock();
      RefillFlow(*flow);
      lock.Lock();
      continue;
    }
    if (steady_now >= next_sweep_ && refills_ > 0 && room && !shards_.empty()) {
      next_sweep_ = steady_now + kSweepEvery;
      std::vector<int> shards(shards_.begin(), shards_.end());
      lock.Unlock();
      std::size_t found = 0;
      Load(shards, BeforeAll(), now_ms - kSweepLagMs, &found);
      lock.Lock();
      swept_ += found;
      continue;
    }
    if (steady_now >= next_collect_) {
      next_collect_ = steady_now + kCollectEvery;
      gate_.Collect(now_ms);
    }
    // Paused (delivery:pause): due timers wait in the wheel and the gate.
    if (!paused_) {
      wheel_.Advance(steady_now, [&](std::string id) {
        mutex_.AssertHeld();  // Advance calls back under our lock
        auto it = entries_.find(id);
        if (it == entries_.end() || it->second.in_flight || it->second.waiting) return;
        Entry& entry = it->second;
        entry.timer = TimerId();
        entry.waiting = true;
        // Since when it waits for its flow: since its flow kept it out of the
        // window past its due time (RefillFlow), else now.
        const bool held = entry.held_since_ms != 0;
        gate_.Ready(*entry.flow, {entry.due_ms, std::move(id), ""},
                    held ? entry.held_since_ms : now_ms, held);
      });
      gate_next_ = gate_.Release(steady_now, now_ms, released);
      for (ReleasedEntry& r : released) {
        auto it = entries_.find(r.entry.id);
        if (it == entries_.end() || !it->second.waiting) continue;  // cannot be: Unready
        it->second.waiting = false;
        it->second.in_flight = true;
        it->second.slot = true;
        ++in_flight_;
        fired.push_back({std::move(r.entry), r.throttled_ms});
      }
      released.clear();
    }
    if (!fired.empty()) {
      lock.Unlock();
      fire_(std::move(fired));
      fired.clear();
      lock.Lock();
      continue;
    }
    // Sleep to the next deadline, refill or release of a flow, and look
    // again within a second (room may have opened under the cap; settings
    // may have changed).
    TimePoint until = steady_now + std::chrono::seconds(1);
    if (room && !shards_.empty()) {
      until = std::min(until, clock_.SteadyAt(window_end_.due_ms - window / 2));
    }
    if (!shards_to_load_.empty()) until = std::min(until, retry_load_at_);
    if (room && !shards_.empty()) until = std::min(until, next_sweep_);
    if (!paused_) {
      if (!deferred_.empty() && flow_refill_retry_at_ > steady_now) {
        until = std::min(until, flow_refill_retry_at_);
      }
      until = std::min(until, gate_next_);
      if (auto next = wheel_.NextDeadline(); next && *next < until) until = *next;
    }
    if (until <= steady_now) continue;
    sleeping_until_ = until;
    lock.Unlock();
    sleeper_->SleepUntil(until, token);
    lock.Lock();
    sleeping_until_ = TimePoint::max();
  }
}

}  // namespace tickwheel::server
