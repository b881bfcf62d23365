#include "scheduler/scheduler.h"

#include <algorithm>

#include "wall_clock.h"

namespace tickwheel::server {

Scheduler::Scheduler(TimerStore& store, SchedulerOptions options, Fire fire)
    : store_(store),
      options_(options),
      fire_(std::move(fire)),
      wheel_(std::chrono::milliseconds(1)) {}

Scheduler::~Scheduler() { Stop(); }

void Scheduler::Start() { thread_ = std::thread([this] { Loop(); }); }

void Scheduler::Stop() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Scheduler::PlaceLocked(const std::string& id, Entry& entry,
                            std::int64_t due_ms) {
  const TimePoint deadline = SteadyDeadlineForWallMs(due_ms);
  entry.due_ms = due_ms;
  if (entry.timer == TimerId() || !wheel_.Reschedule(entry.timer, deadline)) {
    entry.timer = wheel_.Schedule(deadline, id);
  }
  if (deadline < sleeping_until_) cv_.notify_one();
}

void Scheduler::Arm(const std::string& id, std::int64_t due_ms) {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(id);
  if (it != entries_.end() && it->second.in_flight) {
    it->second.rearm = due_ms;
    return;
  }
  if (due_ms >= window_end_ms_) {  // a later refill loads it
    if (it != entries_.end()) {
      wheel_.Cancel(it->second.timer);
      entries_.erase(it);
    }
    return;
  }
  if (it == entries_.end()) it = entries_.emplace(id, Entry{}).first;
  PlaceLocked(id, it->second, due_ms);
}

void Scheduler::Disarm(const std::string& id) {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  if (it->second.in_flight) {
    it->second.rearm.reset();
    return;
  }
  wheel_.Cancel(it->second.timer);
  entries_.erase(it);
}

void Scheduler::Finish(const std::string& id) {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(id);
  if (it == entries_.end() || !it->second.in_flight) return;
  --in_flight_;
  Entry& entry = it->second;
  entry.in_flight = false;
  entry.timer = TimerId();
  if (entry.rearm && *entry.rearm < window_end_ms_) {
    const std::int64_t due = *entry.rearm;
    entry.rearm.reset();
    PlaceLocked(id, entry, due);
  } else {
    entries_.erase(it);
  }
}

std::size_t Scheduler::loaded() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

std::size_t Scheduler::in_flight() const {
  std::lock_guard lock(mutex_);
  return in_flight_;
}

std::int64_t Scheduler::window_end_ms() const {
  std::lock_guard lock(mutex_);
  return window_end_ms_;
}

std::uint64_t Scheduler::refills() const {
  std::lock_guard lock(mutex_);
  return refills_;
}

void Scheduler::Refill(std::int64_t now_ms) {
  const std::int64_t window = options_.window.count();
  std::int64_t from;
  std::int64_t to = now_ms + window;
  std::size_t budget;
  {
    std::lock_guard lock(mutex_);
    from = window_end_ms_;
    if (to <= from) return;
    // Creates committed from now on see the new end and arm themselves;
    // those committed before are visible to the scan below.
    window_end_ms_ = to;
    budget = options_.max_window_timers > entries_.size()
                 ? options_.max_window_timers - entries_.size()
                 : 0;
  }
  std::vector<DueEntry> due = store_.ScanDue(from, to, std::max<std::size_t>(budget, 1));
  std::int64_t end = to;
  if (due.size() >= budget && !due.empty()) {
    // Capped: the window ends at the last loaded millisecond; load all of
    // that millisecond so the window boundary is a time, not a key.
    end = due.back().due_ms + 1;
    std::vector<DueEntry> rest = store_.ScanDue(due.back().due_ms, end, SIZE_MAX);
    due.insert(due.end(), rest.begin(), rest.end());
  }
  std::lock_guard lock(mutex_);
  for (DueEntry& e : due) {
    if (e.due_ms >= end) continue;
    auto [it, inserted] = entries_.try_emplace(e.id);
    if (inserted) PlaceLocked(e.id, it->second, e.due_ms);
  }
  window_end_ms_ = std::min(window_end_ms_, end);
  ++refills_;
}

void Scheduler::Loop() {
  const std::int64_t window = options_.window.count();
  std::vector<DueEntry> fired;
  std::unique_lock lock(mutex_);
  while (!stop_) {
    const std::int64_t now_ms = WallNowMs();
    const bool room = entries_.size() < options_.max_window_timers * 3 / 4;
    if (refills_ == 0 || (window_end_ms_ < now_ms + window / 2 && room)) {
      lock.unlock();
      Refill(now_ms);
      lock.lock();
      if (stop_) break;
    }
    wheel_.Advance(std::chrono::steady_clock::now(), [&](std::string id) {
      auto it = entries_.find(id);
      if (it == entries_.end() || it->second.in_flight) return;
      it->second.in_flight = true;
      it->second.timer = TimerId();
      ++in_flight_;
      fired.push_back({it->second.due_ms, std::move(id)});
    });
    if (!fired.empty()) {
      lock.unlock();
      fire_(std::move(fired));
      fired.clear();
      lock.lock();
      continue;
    }
    // Sleep to the next deadline, but wake for refills every 50 ms.
    TimePoint until = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
    if (auto next = wheel_.NextDeadline(); next && *next < until) until = *next;
    sleeping_until_ = until;
    cv_.wait_until(lock, until);
    sleeping_until_ = TimePoint::max();
  }
}

}  // namespace tickwheel::server
