// SPDX-License-Identifier: Apache-2.0
#include "scheduler/scheduler.h"

#include <algorithm>

namespace tickwheel::server {
namespace {

// The position just after `e`: ids are made of characters above '\x01'.
DueEntry After(const DueEntry& e) { return {e.due_ms, e.id + '\x01'}; }

// The position before every timer.
DueEntry BeforeAll() { return {INT64_MIN, ""}; }

}  // namespace

Scheduler::Scheduler(TimerStore& store, ServerClock& clock, SchedulerOptions options,
                     Fire fire)
    : store_(store),
      clock_(clock),
      options_(options),
      fire_(std::move(fire)),
      sleeper_(clock.steady().NewSleeper()),
      wheel_(std::chrono::milliseconds(1), clock.steady().Now()) {}

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
  {
    internal::MutexLock lock(mutex_);
    for (int s : shards) {
      if (shards_.insert(s).second) shards_to_load_.push_back(s);
    }
  }
  sleeper_->Wake();
}

void Scheduler::RemoveShards(const std::vector<int>& shards) {
  internal::MutexLock lock(mutex_);
  for (int s : shards) shards_.erase(s);
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

void Scheduler::EraseLocked(std::unordered_map<std::string, Entry>::iterator it) {
  if (it->second.timer != TimerId()) wheel_.Cancel(it->second.timer);
  entries_.erase(it);
  WakeForRoomLocked();
}

void Scheduler::ArmLocked(const std::string& id, std::int64_t due_ms) {
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
      window_end_ = {due_ms, id};
      return;
    }
    it = entries_.emplace(id, Entry{}).first;
  }
  it->second.due_ms = due_ms;
  PlaceLocked(id, it->second, clock_.SteadyAt(due_ms));
}

void Scheduler::OnDueChange(const std::string& id, std::optional<std::int64_t> due_ms) {
  internal::MutexLock lock(mutex_);
  if (!Owned(id)) return;
  if (due_ms) {
    ArmLocked(id, *due_ms);
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

void Scheduler::Finish(const std::string& id) {
  internal::MutexLock lock(mutex_);
  auto it = entries_.find(id);
  if (it == entries_.end() || !it->second.in_flight) return;
  --in_flight_;
  Entry& entry = it->second;
  entry.in_flight = false;
  entry.timer = TimerId();
  const std::optional<std::int64_t> rearm = entry.rearm;
  entry.rearm.reset();
  entries_.erase(it);
  if (rearm && Owned(id)) {
    ArmLocked(id, *rearm);  // re-armed as if new (the window may have moved)
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
  entry.in_flight = false;
  entry.timer = TimerId();
  if (entry.rearm || !Owned(id)) {  // the store moved it meanwhile, or not ours
    const std::optional<std::int64_t> rearm = entry.rearm;
    entries_.erase(it);
    if (rearm && Owned(id)) ArmLocked(id, *rearm);
    return;
  }
  entry.due_ms = due_ms;
  PlaceLocked(id, entry, std::max(clock_.SteadyAt(due_ms), clock_.steady().Now() + delay));
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
  {
    internal::MutexLock lock(mutex_);
    budget = options_.max_window_timers > entries_.size()
                 ? options_.max_window_timers - entries_.size()
                 : 0;
  }
  if (budget == 0) return true;
  Result<std::vector<DueEntry>> due = store_.ScanDue(shards, from, to_ms, budget);
  internal::MutexLock lock(mutex_);
  if (!due.ok()) {
    // Nothing of it is loaded: the window ends where the load began, and
    // the loop tries again a little later (never in a spin).
    window_end_ = std::min(window_end_, from);
    retry_load_at_ = clock_.steady().Now() + kLoadRetryDelay;
    return false;
  }
  // Capped: what was not read is beyond the window.
  if (due->size() >= budget && !due->empty()) window_end_ = std::min(window_end_, After(due->back()));
  for (DueEntry& e : *due) {
    if (!InWindow(e.due_ms, e.id) || !Owned(e.id)) continue;
    auto [it, inserted] = entries_.try_emplace(e.id);
    if (!inserted) continue;  // armed meanwhile: that is newer
    if (entries_.size() > options_.max_window_timers) {  // armed meanwhile, full
      entries_.erase(it);
      window_end_ = e;
      break;
    }
    it->second.due_ms = e.due_ms;
    PlaceLocked(e.id, it->second, clock_.SteadyAt(e.due_ms));
    if (loaded) ++*loaded;
  }
  return true;
}

void Scheduler::Loop() {
  const std::int64_t window = options_.window.count();
  std::vector<DueEntry> fired;
  internal::MutexLock lock(mutex_);
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
    const bool room = entries_.size() < options_.max_window_timers * 3 / 4 &&
                      steady_now >= retry_load_at_;
    const bool refill_due = window_end_.due_ms < now_ms + window / 2 && room && !shards_.empty();
    if (refills_ == 0 || refill_due) {
      // Writes committed from now on see the new end and arm themselves;
      // those committed before are visible to the scan.
      const DueEntry from = window_end_;
      const std::int64_t to_ms = std::max(now_ms + window, from.due_ms);
      window_end_ = {to_ms, ""};
      std::vector<int> shards(shards_.begin(), shards_.end());
      ++refills_;
      lock.Unlock();
      Load(shards, from, to_ms);
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
    if (!paused_) {  // paused: due timers wait in the wheel
      wheel_.Advance(steady_now, [&](std::string id) {
        mutex_.AssertHeld();  // Advance calls back under our lock
        auto it = entries_.find(id);
        if (it == entries_.end() || it->second.in_flight) return;
        it->second.in_flight = true;
        it->second.timer = TimerId();
        ++in_flight_;
        fired.push_back({it->second.due_ms, std::move(id)});
      });
    }
    if (!fired.empty()) {
      lock.Unlock();
      fire_(std::move(fired));
      fired.clear();
      lock.Lock();
      continue;
    }
    // Sleep to the next deadline or refill, and look again within a second
    // (room may have opened under the cap).
    TimePoint until = steady_now + std::chrono::seconds(1);
    if (room && !shards_.empty()) {
      until = std::min(until, clock_.SteadyAt(window_end_.due_ms - window / 2));
    }
    if (!shards_to_load_.empty()) until = std::min(until, retry_load_at_);
    if (room && !shards_.empty()) until = std::min(until, next_sweep_);
    if (auto next = wheel_.NextDeadline(); next && *next < until && !paused_) until = *next;
    if (until <= steady_now) continue;
    sleeping_until_ = until;
    lock.Unlock();
    sleeper_->SleepUntil(until, token);
    lock.Lock();
    sleeping_until_ = TimePoint::max();
  }
}

}  // namespace tickwheel::server
