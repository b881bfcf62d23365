// SPDX-License-Identifier: Apache-2.0
// go-zero's single-level timing wheel, written here from its design (the
// seed articles), with tickwheel-style storage: one ring of slots advanced by a ticker every interval;
// timers further out than one turn carry a `circle` count; removal is lazy
// (a flag, dropped when the slot is next scanned); a move records a `diff`
// to shift the entry by when its circle runs out. Unlike go-zero, circles
// and diffs are computed relative to the ticker's position, so a moved timer
// is never a turn early or late. Entries live in a slab and slots are
// vectors of entry indices (go-zero uses container/list, one heap node per
// entry: gozero_list_wheel_backend.h), so this is the fastest rendition of
// the design we know, kept as the strongest single-level peer.
#ifndef TICKWHEEL_BENCH_CORE_GOZERO_WHEEL_BACKEND_H_
#define TICKWHEEL_BENCH_CORE_GOZERO_WHEEL_BACKEND_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "backend.h"
#include "bench_clock.h"
#include "fire_log.h"

namespace tickwheel::bench {

// `kSlots` slots of 1 ms; the benchmark uses 4096 (a turn of 4.096 s), the
// checks also a small ring so that circles and diffs are exercised.
template <std::uint32_t kSlots>
class GoZeroWheel {
 public:
  static constexpr const char* kName = "go-zero-wheel-slab";
  static constexpr std::int64_t kTickNs = 1'000'000;  // the interval: 1 ms

  static constexpr std::size_t kHarnessBytesPerTimer = 0;

  GoZeroWheel(std::size_t capacity, std::int64_t now_ns, Storage storage)
      : origin_ns_(now_ns),
        entry_of_(new std::uint32_t[capacity]),
        slot_of_(new std::uint32_t[capacity]),
        slots_(kSlots) {
    if (storage == Storage::kPrefault) {
      entries_.resize(capacity);
      entries_.clear();
      std::memset(entry_of_.get(), 0, capacity * sizeof(std::uint32_t));
      std::memset(slot_of_.get(), 0, capacity * sizeof(std::uint32_t));
    }
  }

  void SetNow(std::int64_t) {}

  void Insert(std::uint32_t id, std::int64_t deadline_ns) {
    const std::uint64_t steps = Steps(deadline_ns);
    const std::uint32_t index = NewEntry(id);
    entries_[index].circle = static_cast<std::uint32_t>((steps - 1) / kSlots);
    File(id, index, SlotAfter(steps));
    ++size_;
  }

  void Move(std::uint32_t id, std::int64_t deadline_ns) {
    const std::uint64_t steps = Steps(deadline_ns);
    const std::uint32_t circle = static_cast<std::uint32_t>((steps - 1) / kSlots);
    // Ticks until the slot is first scanned, minus one, for the old and the
    // new slot.
    const std::uint32_t rel_old = Rel(slot_of_[id]);
    const std::uint32_t rel_new = static_cast<std::uint32_t>((steps - 1) % kSlots);
    Entry& e = entries_[entry_of_[id]];
    if (rel_new >= rel_old) {
      e.circle = circle;
      e.diff = rel_new - rel_old;
    } else if (circle > 0) {
      e.circle = circle - 1;
      e.diff = kSlots + rel_new - rel_old;
    } else {
      // Due before the old slot comes up: go-zero flags the old entry
      // removed and files a new one.
      e.removed = true;
      const std::uint32_t index = NewEntry(id);
      File(id, index, SlotAfter(steps));
    }
  }

  void Cancel(std::uint32_t id) {
    entries_[entry_of_[id]].removed = true;
    --size_;
  }

  bool RunOnce(FireLog& log) {
    if (size_ == 0) return false;
    // The ticker: wake at the next tick, then scan every slot whose tick has
    // passed (more than one if the loop was late).
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
    std::uint32_t circle;  // full turns left before it is due (or shifted)
    std::uint32_t diff;    // slots to shift by when circle reaches 0
    bool removed;
  };

  // Ticks from the ticker's position to the deadline's tick (rounded up so
  // never early); at least 1, as go-zero files a timer no earlier than the
  // next tick.
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
  std::uint32_t NewEntry(std::uint32_t id) {
    std::uint32_t index;
    if (!free_.empty()) {
      index = free_.back();
      free_.pop_back();
    } else {
      index = static_cast<std::uint32_t>(entries_.size());
      entries_.emplace_back();
    }
    entries_[index] = Entry{id, 0, 0, false};
    entry_of_[id] = index;
    return index;
  }
  void File(std::uint32_t id, std::uint32_t index, std::uint32_t slot) {
    slots_[slot].push_back(index);
    slot_of_[id] = slot;
  }

  // go-zero's scanAndRunTasks: drop removed entries, count down circles,
  // shift entries with a diff, fire the rest.
  void Scan(std::uint32_t slot, FireLog& log) {
    std::vector<std::uint32_t>& list = slots_[slot];
    std::size_t kept = 0;
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::uint32_t index = list[i];
      Entry& e = entries_[index];
      if (e.removed) {
        free_.push_back(index);
      } else if (e.circle > 0) {
        --e.circle;
        list[kept++] = index;
      } else if (e.diff > 0) {
        const std::uint32_t to = (slot + e.diff) % kSlots;
        e.diff = 0;
        File(e.id, index, to);
      } else {
        free_.push_back(index);
        --size_;
        log.Append(e.id);
      }
    }
    list.resize(kept);
  }

  const std::int64_t origin_ns_;
  std::uint64_t tick_ = 0;  // the last tick scanned
  std::size_t size_ = 0;    // pending timers
  std::unique_ptr<std::uint32_t[]> entry_of_;  // id -> its live entry
  std::unique_ptr<std::uint32_t[]> slot_of_;   // id -> its live entry's slot
  std::vector<Entry> entries_;
  std::vector<std::uint32_t> free_;
  std::vector<std::vector<std::uint32_t>> slots_;
};

using GoZeroWheelBackend = GoZeroWheel<4096>;

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_BENCH_CORE_GOZERO_WHEEL_BACKEND_H_
