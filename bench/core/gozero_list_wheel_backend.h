// SPDX-License-Identifier: Apache-2.0
// go-zero's TimingWheel data structures, in C++: the same design as
// gozero_wheel_backend.h (a ticker every interval, circles, lazy removal
// flags, diffs for moves) with go-zero's storage: every slot a doubly
// linked list (container/list; here std::list, one allocated node per
// entry) and a position record per timer (go-zero's timers map; here an
// array indexed by id, holding the slot and the list node). Moves that
// re-file an entry splice its node (go-zero allocates a new list element).
#ifndef TICKWHEEL_BENCH_CORE_GOZERO_LIST_WHEEL_BACKEND_H_
#define TICKWHEEL_BENCH_CORE_GOZERO_LIST_WHEEL_BACKEND_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <list>
#include <new>
#include <vector>

#include "backend.h"
#include "bench_clock.h"
#include "fire_log.h"

namespace tickwheel::bench {

class GoZeroListWheelBackend {
 public:
  static constexpr const char* kName = "go-zero-wheel";
  static constexpr std::size_t kHarnessBytesPerTimer = 0;
  static constexpr std::int64_t kTickNs = 1'000'000;  // the interval: 1 ms
  static constexpr std::uint32_t kSlots = 4096;       // one turn: 4.096 s

  // kPrefault touches the position records; list nodes are allocated one
  // per entry, as in go-zero, whatever the storage mode.
  GoZeroListWheelBackend(std::size_t capacity, std::int64_t now_ns,
                         Storage storage)
      : origin_ns_(now_ns),
        pos_(static_cast<Position*>(std::malloc(capacity * sizeof(Position)))),
        slots_(kSlots) {
    if (pos_ == nullptr) throw std::bad_alloc();
    if (storage == Storage::kPrefault) {
      std::memset(static_cast<void*>(pos_), 0, capacity * sizeof(Position));
    }
  }
  ~GoZeroListWheelBackend() { std::free(pos_); }

  void SetNow(std::int64_t) {}

  void Insert(std::uint32_t id, std::int64_t deadline_ns) {
    const std::uint64_t steps = Steps(deadline_ns);
    const std::uint32_t slot = SlotAfter(steps);
    slots_[slot].push_back(
        Entry{id, static_cast<std::uint32_t>((steps - 1) / kSlots), 0, false});
    pos_[id] = Position{slot, std::prev(slots_[slot].end())};
    ++size_;
  }

  void Move(std::uint32_t id, std::int64_t deadline_ns) {
    const std::uint64_t steps = Steps(deadline_ns);
    const auto circle = static_cast<std::uint32_t>((steps - 1) / kSlots);
    Position& p = pos_[id];
    const std::uint32_t rel_old = Rel(p.slot);
    const auto rel_new = static_cast<std::uint32_t>((steps - 1) % kSlots);
    Entry& e = *p.entry;
    if (rel_new >= rel_old) {
      e.circle = circle;
      e.diff = rel_new - rel_old;
    } else if (circle > 0) {
      e.circle = circle - 1;
      e.diff = kSlots + rel_new - rel_old;
    } else {
      e.removed = true;
      const std::uint32_t slot = SlotAfter(steps);
      slots_[slot].push_back(Entry{id, 0, 0, false});
      p = Position{slot, std::prev(slots_[slot].end())};
    }
  }

  void Cancel(std::uint32_t id) {
    pos_[id].entry->removed = true;
    --size_;
  }

  bool RunOnce(FireLog& log) {
    if (size_ == 0) return false;
    SleepUntilNs(origin_ns_ + static_cast<std::int64_t>(tick_ + 1) * kTickNs);
    const auto now_tick =
        static_cast<std::uint64_t>((NowNs() - origin_ns_) / kTickNs);
    while (tick_ < now_tick) {
      ++tick_;
      Scan(static_cast<std::uint32_t>(tick_ % kSlots), log);
    }
    return true;
  }

 private:
  struct Entry {
    std::uint32_t id;
    std::uint32_t circle;
    std::uint32_t diff;
    bool removed;
  };
  using List = std::list<Entry>;
  struct Position {
    std::uint32_t slot;
    List::iterator entry;
  };

  std::uint64_t Steps(std::int64_t deadline_ns) const {
    const std::int64_t d = deadline_ns - origin_ns_;
    const std::int64_t due = d <= 0 ? 0 : (d + kTickNs - 1) / kTickNs;
    const auto t = static_cast<std::int64_t>(tick_);
    return static_cast<std::uint64_t>(std::max<std::int64_t>(due - t, 1));
  }
  std::uint32_t SlotAfter(std::uint64_t steps) const {
    return static_cast<std::uint32_t>((tick_ + steps) % kSlots);
  }
  std::uint32_t Rel(std::uint32_t slot) const {
    return static_cast<std::uint32_t>((slot + 2 * kSlots - tick_ % kSlots - 1) %
                                      kSlots);
  }

  void Scan(std::uint32_t slot, FireLog& log) {
    List& list = slots_[slot];
    for (auto it = list.begin(); it != list.end();) {
      Entry& e = *it;
      if (e.removed) {
        it = list.erase(it);
      } else if (e.circle > 0) {
        --e.circle;
        ++it;
      } else if (e.diff > 0) {
        const std::uint32_t to = (slot + e.diff) % kSlots;
        e.diff = 0;
        const auto moved = it++;
        slots_[to].splice(slots_[to].end(), list, moved);
        pos_[e.id].slot = to;
      } else {
        --size_;
        log.Append(e.id);
        it = list.erase(it);
      }
    }
  }

  const std::int64_t origin_ns_;
  std::uint64_t tick_ = 0;
  std::size_t size_ = 0;
  Position* pos_;  // id -> where its live entry is
  std::vector<List> slots_;
};

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_BENCH_CORE_GOZERO_LIST_WHEEL_BACKEND_H_
