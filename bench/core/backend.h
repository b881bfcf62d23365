// SPDX-License-Identifier: Apache-2.0
// The one interface every timer implementation is benchmarked through.
#ifndef TICKWHEEL_BENCH_CORE_BACKEND_H_
#define TICKWHEEL_BENCH_CORE_BACKEND_H_

#include <concepts>
#include <cstddef>
#include <cstdint>

#include "fire_log.h"

namespace tickwheel::bench {

enum class Storage { kPrefault, kOnDemand };

// A Backend adapts one timer implementation (tickwheel's Wheel, a peer
// library's timer queue, a reference structure) to the workloads, as
// wahern/timeout's bench does, but resolved at compile time so the harness
// adds no indirect call to what it measures.
//
// Timers are named by the harness with dense ids [0, capacity); each
// backend keeps whatever handle its implementation needs per id. Times are
// nanoseconds on NowNs()'s clock (CLOCK_MONOTONIC).
//
//   B(capacity, now, storage)
//                        an empty timer set for up to `capacity` ids; with
//                        Storage::kPrefault its per-timer storage is
//                        allocated and touched up front (timed workloads:
//                        no page faults in the figures), with kOnDemand it
//                        grows as timers arrive (the memory workload)
//   B::kHarnessBytesPerTimer
//                        bytes per id the adapter keeps that a caller
//                        would keep anyway (a TimerId, a flag): subtracted
//                        from the memory figure
//   b.SetNow(now)        the harness's clock read (once per batch of up to
//                        4096 operations, `now` read just before); backends
//                        that cache a loop time refresh it here
//   b.Insert(id, t)      REQUIRES: id not pending; schedules it due at t
//   b.Move(id, t)        REQUIRES: id pending; it is due at t instead
//   b.Cancel(id)         REQUIRES: id pending; it never fires
//   b.RunOnce(log)       one turn of the event loop: sleeps (never spins)
//                        until a timer may be due, appends the id of every
//                        timer then due to `log` (log.Append only), returns
//                        true; returns false at once if nothing is pending
//
// A timer must never fire before its deadline, and must fire exactly once
// unless cancelled (bench_check_test verifies both for every backend).
template <typename B>
concept Backend = requires(B b, std::uint32_t id, std::int64_t t,
                           FireLog& log) {
  { B::kName } -> std::convertible_to<const char*>;
  { B::kHarnessBytesPerTimer } -> std::convertible_to<std::size_t>;
  b.SetNow(t);
  b.Insert(id, t);
  b.Move(id, t);
  b.Cancel(id);
  { b.RunOnce(log) } -> std::same_as<bool>;
};

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_BENCH_CORE_BACKEND_H_
