// SPDX-License-Identifier: Apache-2.0
// FireLog: where every backend's expiry callback writes, the same way.
#ifndef TICKWHEEL_BENCH_CORE_FIRE_LOG_H_
#define TICKWHEEL_BENCH_CORE_FIRE_LOG_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

#include "bench_clock.h"

namespace tickwheel::bench {

// A preallocated log of fired timer ids. In the benchmark the callback only
// appends an id (no clock read, no allocation), so it costs every backend
// the same few nanoseconds. With `timestamps` (the checks), each entry also
// gets the time it fired, read inside the callback, to prove "never early".
// Not thread-safe: the backend's loop thread owns it.
class FireLog {
 public:
  FireLog(std::size_t capacity, bool timestamps)
      : capacity_(capacity),
        ids_(new std::uint32_t[capacity]),
        times_(timestamps ? new std::int64_t[capacity] : nullptr) {
    // Touched now, so that no page fault lands in a measured loop.
    std::memset(ids_.get(), 0, capacity * sizeof(std::uint32_t));
    if (times_) std::memset(times_.get(), 0, capacity * sizeof(std::int64_t));
  }

  // REQUIRES: fewer than `capacity` entries so far.
  void Append(std::uint32_t id) {
    if (size_ >= capacity_) overflow_ = true; else {
      if (times_) times_[size_] = NowNs();
      ids_[size_++] = id;
    }
  }

  std::size_t size() const { return size_; }
  std::uint32_t id(std::size_t i) const { return ids_[i]; }
  // REQUIRES: constructed with timestamps.
  std::int64_t time(std::size_t i) const { return times_[i]; }
  bool has_times() const { return times_ != nullptr; }
  // True if a callback came when the log was full (more fired than inserted).
  bool overflowed() const { return overflow_; }

 private:
  std::size_t capacity_;
  std::size_t size_ = 0;
  bool overflow_ = false;
  std::unique_ptr<std::uint32_t[]> ids_;
  std::unique_ptr<std::int64_t[]> times_;
};

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_BENCH_CORE_FIRE_LOG_H_
