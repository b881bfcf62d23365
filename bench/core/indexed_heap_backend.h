// SPDX-License-Identifier: Apache-2.0
// An indexed binary min-heap of deadlines: the textbook O(log n) timer queue
// with O(log n) cancel and move (each id knows its heap position).
#ifndef TICKWHEEL_BENCH_CORE_INDEXED_HEAP_BACKEND_H_
#define TICKWHEEL_BENCH_CORE_INDEXED_HEAP_BACKEND_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "backend.h"
#include "bench_clock.h"
#include "fire_log.h"

namespace tickwheel::bench {

class IndexedHeapBackend {
 public:
  static constexpr const char* kName = "indexed-heap";

  static constexpr std::size_t kHarnessBytesPerTimer = 0;

  // Memory: 16 bytes per timer in the heap plus a 4-byte position per id.
  IndexedHeapBackend(std::size_t capacity, std::int64_t, Storage storage)
      : pos_(new std::uint32_t[capacity]) {
    if (storage == Storage::kPrefault) {
      heap_.resize(capacity);
      heap_.clear();
      std::memset(pos_.get(), 0, capacity * sizeof(std::uint32_t));
    }
  }

  void SetNow(std::int64_t) {}
  void Insert(std::uint32_t id, std::int64_t deadline_ns) {
    heap_.push_back({deadline_ns, id});
    SiftUp(heap_.size() - 1, heap_.back());
  }
  void Move(std::uint32_t id, std::int64_t deadline_ns) {
    const std::size_t i = pos_[id];
    const Entry e{deadline_ns, id};
    if (deadline_ns < heap_[i].deadline) {
      SiftUp(i, e);
    } else {
      SiftDown(i, e);
    }
  }
  void Cancel(std::uint32_t id) { RemoveAt(pos_[id]); }

  bool RunOnce(FireLog& log) {
    if (heap_.empty()) return false;
    SleepUntilNs(heap_[0].deadline);
    const std::int64_t now = NowNs();
    while (!heap_.empty() && heap_[0].deadline <= now) {
      const std::uint32_t id = heap_[0].id;
      RemoveAt(0);
      log.Append(id);
    }
    return true;
  }

 private:
  struct Entry {
    std::int64_t deadline;
    std::uint32_t id;
  };

  void Place(std::size_t i, const Entry& e) {
    heap_[i] = e;
    pos_[e.id] = static_cast<std::uint32_t>(i);
  }
  // Moves the hole at `i` up until `e` fits there.
  void SiftUp(std::size_t i, Entry e) {
    while (i > 0) {
      const std::size_t parent = (i - 1) / 2;
      if (heap_[parent].deadline <= e.deadline) break;
      Place(i, heap_[parent]);
      i = parent;
    }
    Place(i, e);
  }
  void SiftDown(std::size_t i, Entry e) {
    const std::size_t n = heap_.size();
    for (;;) {
      std::size_t child = 2 * i + 1;
      if (child >= n) break;
      if (child + 1 < n && heap_[child + 1].deadline < heap_[child].deadline) {
        ++child;
      }
      if (e.deadline <= heap_[child].deadline) break;
      Place(i, heap_[child]);
      i = child;
    }
    Place(i, e);
  }
  void RemoveAt(std::size_t i) {
    const Entry last = heap_.back();
    heap_.pop_back();
    if (i == heap_.size()) return;
    if (i > 0 && last.deadline < heap_[(i - 1) / 2].deadline) {
      SiftUp(i, last);
    } else {
      SiftDown(i, last);
    }
  }

  std::vector<Entry> heap_;
  std::unique_ptr<std::uint32_t[]> pos_;
};

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_BENCH_CORE_INDEXED_HEAP_BACKEND_H_
