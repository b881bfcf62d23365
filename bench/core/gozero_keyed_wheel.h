// SPDX-License-Identifier: Apache-2.0
// go-zero's keyed TimingWheel design, in C++, as the keyed benchmark's peer:
// SetTimer, MoveTimer and RemoveTimer send a command to one loop thread
// (go-zero: a channel per kind), which owns a single-level wheel of linked
// lists with circles, diffs and lazy removal flags plus a key -> position
// map, and ticks every interval. Calls return once the command is queued:
// its effect comes later, as in go-zero (tickwheel::TimingWheel's calls are
// synchronous instead). The queue is a mutex-guarded vector the loop swaps
// out whole, so producers never wait for the loop (go-zero's unbuffered
// channels make them). A call may be stamped: the loop then records how long
// after the call it applied it (the call's latency as seen by its effect).
#ifndef TICKWHEEL_BENCH_CORE_GOZERO_KEYED_WHEEL_H_
#define TICKWHEEL_BENCH_CORE_GOZERO_KEYED_WHEEL_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "bench_clock.h"

namespace tickwheel::bench {

template <typename Key, typename Value>
class GoZeroKeyedWheel {
 public:
  using Execute = std::function<void(const Key&, const Value&)>;

  GoZeroKeyedWheel(std::chrono::nanoseconds interval, std::uint32_t slots,
                   Execute execute)
      : interval_(interval),
        num_slots_(slots),
        execute_(std::move(execute)),
        slots_(slots),
        loop_([this] { Loop(); }) {}
  ~GoZeroKeyedWheel() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_one();
    loop_.join();
  }

  void SetTimer(const Key& key, Value value, std::chrono::nanoseconds delay,
                bool stamp = false) {
    Send({Kind::kSet, key, std::move(value), delay, stamp ? NowNs() : 0});
  }
  void MoveTimer(const Key& key, std::chrono::nanoseconds delay, bool stamp = false) {
    Send({Kind::kMove, key, Value{}, delay, stamp ? NowNs() : 0});
  }
  void RemoveTimer(const Key& key, bool stamp = false) {
    Send({Kind::kRemove, key, Value{}, {}, stamp ? NowNs() : 0});
  }

  // Commands the loop has applied so far.
  std::uint64_t applied() const { return applied_.load(std::memory_order_acquire); }

  // Call-to-apply times of the stamped commands applied so far, in ns.
  // REQUIRES: applied() has been read since (the loop wrote them before).
  const std::vector<std::int64_t>& latencies() const { return latencies_; }
  // REQUIRES: nothing is queued or being applied.
  void ClearLatencies() { latencies_.clear(); }

 private:
  enum class Kind : std::uint8_t { kSet, kMove, kRemove };
  struct Command {
    Kind kind;
    Key key;
    Value value;
    std::chrono::nanoseconds delay;
    std::int64_t stamped_ns;  // 0: not stamped
  };
  struct Entry {
    Key key;
    Value value;
    std::uint32_t circle;
    std::uint32_t diff;
    bool removed;
  };
  using List = std::list<Entry>;
  struct Position {
    std::uint32_t slot;
    typename List::iterator entry;
  };

  void Send(Command c) {
    bool wake;
    {
      std::lock_guard lock(mutex_);
      wake = queue_.empty() && waiting_;
      queue_.push_back(std::move(c));
    }
    if (wake) wake_.notify_one();
  }

  void Loop() {
    using Clock = std::chrono::steady_clock;
    auto next_tick = Clock::now() + interval_;
    std::vector<Command> batch;
    for (;;) {
      {
        std::unique_lock lock(mutex_);
        waiting_ = true;
        wake_.wait_until(lock, next_tick, [&] { return stop_ || !queue_.empty(); });
        waiting_ = false;
        if (stop_) return;
        batch.swap(queue_);
      }
      for (Command& c : batch) {
        Apply(c);
        if (c.stamped_ns != 0) latencies_.push_back(NowNs() - c.stamped_ns);
      }
      applied_.fetch_add(batch.size(), std::memory_order_release);
      batch.clear();
      while (Clock::now() >= next_tick) {
        next_tick += interval_;
        tick_ = (tick_ + 1) % num_slots_;
        Scan(tick_);
      }
    }
  }

  // go-zero's getPositionAndCircle: steps from the ticker's position.
  void Locate(std::chrono::nanoseconds delay, std::uint32_t& pos, std::uint32_t& circle) const {
    auto steps = static_cast<std::uint64_t>(delay / interval_);
    if (steps == 0) steps = 1;
    pos = static_cast<std::uint32_t>((tick_ + steps) % num_slots_);
    circle = static_cast<std::uint32_t>((steps - 1) / num_slots_);
  }

  void Add(const Key& key, Value value, std::chrono::nanoseconds delay) {
    std::uint32_t pos, circle;
    Locate(delay, pos, circle);
    slots_[pos].push_back(Entry{key, std::move(value), circle, 0, false});
    timers_[key] = Position{pos, std::prev(slots_[pos].end())};
  }

  // go-zero's moveTask, with circles and diffs relative to the ticker.
  void Move(Position& p, const Key& key, std::chrono::nanoseconds delay) {
    std::uint32_t pos, circle;
    Locate(delay, pos, circle);
    const std::uint32_t rel_old = (p.slot + 2 * num_slots_ - tick_ - 1) % num_slots_;
    const std::uint32_t rel_new = (pos + 2 * num_slots_ - tick_ - 1) % num_slots_;
    Entry& e = *p.entry;
    if (rel_new >= rel_old) {
      e.circle = circle;
      e.diff = rel_new - rel_old;
    } else if (circle > 0) {
      e.circle = circle - 1;
      e.diff = num_slots_ + rel_new - rel_old;
    } else {
      e.removed = true;
      slots_[pos].push_back(Entry{key, e.value, 0, 0, false});
      p = Position{pos, std::prev(slots_[pos].end())};
    }
  }

  void Apply(Command& c) {
    auto it = timers_.find(c.key);
    switch (c.kind) {
      case Kind::kSet:
        if (it == timers_.end()) {
          Add(c.key, std::move(c.value), c.delay);
        } else {
          it->second.entry->value = std::move(c.value);
          Move(it->second, c.key, c.delay);
        }
        break;
      case Kind::kMove:
        if (it != timers_.end()) Move(it->second, c.key, c.delay);
        break;
      case Kind::kRemove:
        if (it != timers_.end()) {
          it->second.entry->removed = true;
          timers_.erase(it);
        }
        break;
    }
  }

  void Scan(std::uint32_t slot) {
    List& list = slots_[slot];
    for (auto it = list.begin(); it != list.end();) {
      Entry& e = *it;
      if (e.removed) {
        it = list.erase(it);
      } else if (e.circle > 0) {
        --e.circle;
        ++it;
      } else if (e.diff > 0) {
        const std::uint32_t to = (slot + e.diff) % num_slots_;
        e.diff = 0;
        const auto moved = it++;
        slots_[to].splice(slots_[to].end(), list, moved);
        timers_[e.key].slot = to;
      } else {
        execute_(e.key, e.value);
        timers_.erase(e.key);
        it = list.erase(it);
      }
    }
  }

  const std::chrono::nanoseconds interval_;
  const std::uint32_t num_slots_;
  const Execute execute_;
  // Owned by the loop thread.
  std::vector<List> slots_;
  std::unordered_map<Key, Position> timers_;
  std::uint32_t tick_ = 0;
  std::vector<std::int64_t> latencies_;
  // The queue.
  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<Command> queue_;  // guarded by mutex_
  bool waiting_ = false;        // guarded by mutex_
  bool stop_ = false;           // guarded by mutex_
  std::atomic<std::uint64_t> applied_{0};
  std::thread loop_;  // last: starts once everything exists
};

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_BENCH_CORE_GOZERO_KEYED_WHEEL_H_
