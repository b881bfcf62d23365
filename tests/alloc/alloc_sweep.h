// SPDX-License-Identifier: Apache-2.0
// What the allocation-failure tests (alloc_failure_test: tests/alloc/) share.
// Allocation failures, swept: for each public operation of the library, the
// operation's first allocation fails, then its second, and so on until it
// completes without a failure (alloc_injector.h). Each time: the call did
// what it says, or threw std::bad_alloc having changed nothing (or gave the
// weaker guarantee its header documents); no thread terminated; nothing
// accepted was lost or run twice; the object went on working; and no user
// code ran under a lock of the library (values and callbacks here call back
// into the object from their destructors, and the sweeps run under a
// watchdog). Failures on the library's own threads (timer threads, workers,
// flushers) are injected with FailOthers.
#ifndef TICKWHEEL_TESTS_ALLOC_ALLOC_SWEEP_H_
#define TICKWHEEL_TESTS_ALLOC_ALLOC_SWEEP_H_

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <new>
#include <string>
#include <utility>

#include "alloc_injector.h"
#include "tickwheel/clock.h"

namespace tickwheel {

// The failed checks of the running test so far.
inline int FailedChecks() {
  const ::testing::TestResult* result =
      ::testing::UnitTest::GetInstance()->current_test_info()->result();
  int failed = 0;
  for (int i = 0; i < result->total_part_count(); ++i) {
    if (result->GetTestPartResult(i).failed()) ++failed;
  }
  return failed;
}

// Sweeps one call over its allocations: attempt(n) builds a fresh object,
// makes the call with FailNth(n) armed around it alone, checks what the
// call promises, and returns whether the n-th allocation came (and failed).
// Stops at the first n that the call did not reach, or at the first check
// of this sweep that failed (one sweep's failure does not cut the next
// sweep of the same test short). Returns that n: how many allocations the
// call made.
template <typename Attempt>
long Sweep(const std::string& what, Attempt attempt) {
  const int failed_before = FailedChecks();
  for (long n = 0; n < 20'000; ++n) {
    SCOPED_TRACE(what + ", allocation " + std::to_string(n) + " failing");
    const bool failed = attempt(n);
    if (FailedChecks() != failed_before) return n;
    if (!failed) return n;
  }
  ADD_FAILURE() << what << ": more than 20000 allocations";
  return -1;
}

// Runs `call` with this thread's n-th allocation failing; true if the call
// threw std::bad_alloc. `injected` says whether the n-th allocation came.
template <typename Call>
bool Throws(long n, bool& injected, Call call) {
  testing::alloc::FailNth fail(n);
  bool threw = false;
  try {
    call();
  } catch (const std::bad_alloc&) {
    threw = true;
  }
  injected = fail.failed();
  return threw;
}

// A value that calls back into its container when it goes (through
// `callback`), and counts the values alive.
inline std::atomic<long> live_values{0};
struct Tracked {
  int value = 0;
  std::function<void()>* callback = nullptr;  // not owned
  explicit Tracked(int v, std::function<void()>* cb = nullptr)
      : value(v), callback(cb) {
    ++live_values;
  }
  Tracked(Tracked&& other) noexcept
      : value(other.value), callback(std::exchange(other.callback, nullptr)) {
    ++live_values;
  }
  Tracked& operator=(Tracked&& other) noexcept {
    value = other.value;
    callback = std::exchange(other.callback, nullptr);
    return *this;
  }
  Tracked(const Tracked& other) : value(other.value) { ++live_values; }
  ~Tracked() {
    --live_values;
    if (callback != nullptr && *callback) (*callback)();
  }
};

// What ran, without allocating (the library's threads may be failing
// allocations while callbacks record): per label, the number of runs and
// the clock's time at the last one.
class RunCounts {
 public:
  static constexpr int kLabels = 64;
  explicit RunCounts(const Clock& clock) : clock_(clock) {}
  void Ran(int label) {
    const std::int64_t now = clock_.Now().time_since_epoch().count();
    std::int64_t none = 0;
    first_at_[label].compare_exchange_strong(none, now);
    at_[label] = now;
    ++runs_[label];
  }
  int runs(int label) const { return runs_[label].load(); }
  void Reset() {
    for (auto& r : runs_) r = 0;
    for (auto& a : at_) a = 0;
    for (auto& a : first_at_) a = 0;
  }
  // The time of the last run of `label`, and of the first.
  TimePoint at(int label) const { return TimePoint(Duration(at_[label].load())); }
  TimePoint first_at(int label) const {
    return TimePoint(Duration(first_at_[label].load()));
  }

 private:
  const Clock& clock_;
  std::array<std::atomic<int>, kLabels> runs_{};
  std::array<std::atomic<std::int64_t>, kLabels> at_{};
  std::array<std::atomic<std::int64_t>, kLabels> first_at_{};
};

}  // namespace tickwheel

#endif  // TICKWHEEL_TESTS_ALLOC_ALLOC_SWEEP_H_
