// SPDX-License-Identifier: Apache-2.0
// FlowLimiter: one flow's gate on one node. It decides when the flow's due
// timers may start their attempts: a token bucket for the rate and burst, a
// count of attempts in flight for the cap, the pause, a hold after a
// receiver's Retry-After, and a lower rate after repeated 429s.
#ifndef TICKWHEEL_SERVER_FLOW_FLOW_LIMITER_H_
#define TICKWHEEL_SERVER_FLOW_FLOW_LIMITER_H_

#include <array>
#include <cstddef>
#include <cstdint>

#include "flow/flow_limits.h"
#include "tickwheel/time.h"

namespace tickwheel::server {

// The bucket starts empty and fills at the rate, up to the burst: a
// limiter that was just made (a process start, a share granted in a
// cluster) brings no tokens of its own, so a flow never exceeds
// burst + rate * T in any window of T seconds across restarts and share
// changes (docs/flows.md, "The cluster budget"). Lowering the limits takes
// effect at once (tokens above the new burst are dropped); raising them
// brings no tokens, the bucket fills at the new rate.
//
// After repeated 429s (kTooManyToLower answers 429 without a Retry-After
// since the last change; those in the kLowerEvery after a lowering answer
// requests sent before it and do not count) the rate is halved: the configured rate, or for a flow without
// one the rate at which it was sending in the second before; never below
// one attempt a second (or the configured rate, if lower). The burst
// shrinks in proportion. Each kRecoverEvery without a 429 adds back a tenth
// of that rate, until it is whole again (10 quiet periods from half, 20 s).
//
// It never reads a clock: callers pass `now` (the server's steady clock,
// so tests run on manual time).
// Thread safety: none; the scheduler owns it under its lock.
// Cost: O(1) per call, no allocation.
//
//   FlowLimiter limiter({.rate_per_s = 100, .burst = 10});
//   std::size_t n = limiter.Acquire(now, ready);   // start n attempts now
//   TimePoint next = limiter.NextAt(now);          // when to look again
//   limiter.Release(1);                            // an attempt was answered
class FlowLimiter {
 public:
  static constexpr int kTooManyToLower = 3;
  static constexpr std::chrono::seconds kLowerEvery{1};
  static constexpr std::chrono::seconds kRecoverEvery{2};
  static constexpr double kRecoverStep = 0.1;

  // A rate-limited flow is let go in groups of this much of its rate (at
  // least one attempt, at most its burst): fewer wake-ups, and fewer claim
  // writes, each for a group.
  static constexpr Duration kGroup = std::chrono::milliseconds(10);
  // For a cluster node, where each claim is a PostgreSQL transaction of a
  // few round trips: at a third of 1,000/s, 16 attempts a group instead of
  // 3. Still within the node's share of the burst (Acquire never takes
  // more tokens than the bucket holds).
  static constexpr Duration kClusterGroup = std::chrono::milliseconds(50);

  explicit FlowLimiter(const FlowLimits& limits = {}) : limits_(limits) {}

  // How much of the rate a group is (kGroup unless set).
  void SetGroup(Duration group) { group_ = group; }

  // The flow's limits now (in a cluster, this node's share of them). The
  // first call starts the bucket (empty) at `now`: call it before the rest.
  void SetLimits(const FlowLimits& limits, TimePoint now);
  const FlowLimits& limits() const { return limits_; }

  // Takes what `want` attempts need (a token and a slot each) as far as the
  // flow allows now, and returns how many may start: 0 while paused or
  // held, with no slot free, or with fewer tokens than a group (or than
  // `want`, if fewer wait).
  std::size_t Acquire(TimePoint now, std::size_t want);
  // When the next Acquire may give something, if only time passes: `now`
  // if it would already; the time the bucket holds a group's tokens or a
  // hold ends; TimePoint::max() while paused or with every slot taken (a
  // Release, a resume or a larger share changes that).
  TimePoint NextAt(TimePoint now) const;

  // When an attempt that Acquire let go may be sent, and books that time:
  // the same rate and bucket applied again at the send (GCRA: a start at
  // most every 1/rate, `capacity` of them at once), so what the receiver
  // gets, not only what the gate lets go, stays within burst + rate x T in
  // any T. Between the two, a claim's store write takes a varying time
  // (tens of ms on a loaded PostgreSQL), which could otherwise bunch
  // releases of a little more than a second into one. Returns `now` when
  // the flow has no rate (or no share of one), else `now` or later; the
  // delay is at most that varying time, as the releases keep the pace.
  TimePoint StartAt(TimePoint now);

  // `n` attempts ended (answered, failed or given up): their slots are free.
  void Release(std::size_t n = 1);
  // A receiver said Retry-After: nothing starts before `until`.
  void HoldUntil(TimePoint until);
  // A receiver answered 429 without Retry-After.
  void OnTooManyRequests(TimePoint now);

  std::int64_t in_flight() const { return in_flight_; }
  TimePoint held_until() const { return held_until_; }
  // The rate in force after 429s lowered it; 0 when not lowered.
  double lowered_rate(TimePoint now);
  // What Acquire works with now: the rate (0: none) and the bucket's size.
  double rate(TimePoint now);
  double capacity(TimePoint now);

 private:
  void Refill(TimePoint now);
  void Recover(TimePoint now);
  double RateNow() const;
  double CapacityNow() const;
  // Attempts started in the last second (for the rate to lower from when
  // the flow has none configured).
  double RecentRate(TimePoint now) const;
  void CountStarts(TimePoint now, std::size_t n);
  // A group's tokens: at least one, at most the bucket.
  double GroupTokens(double rate, double capacity) const;

  FlowLimits limits_;
  Duration group_ = kGroup;
  double tokens_ = 0;
  TimePoint refilled_at_{};  // min(): not yet
  bool refilled_ = false;
  std::int64_t in_flight_ = 0;
  TimePoint held_until_{};

  // Lowered after 429s: factor_ < 1 of base_ (the configured rate, or the
  // recent rate when the flow has none).
  double factor_ = 1;
  double base_ = 0;
  int too_many_ = 0;  // 429s since the last change
  TimePoint lowered_at_{};
  TimePoint last_429_{};
  TimePoint recovered_at_{};

  // StartAt's: the theoretical time of the next start (GCRA); a start at
  // t goes at max(t, next_start_ - (capacity - 1) / rate).
  TimePoint next_start_{};
  double paced_rate_ = 0;  // the rate next_start_ was booked at

  // Starts per 100 ms, the last second (slot = tenth of a second mod 10).
  std::array<std::int64_t, 10> starts_{};
  std::int64_t starts_tenth_ = 0;  // the tenth of a second of the newest slot
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_FLOW_FLOW_LIMITER_H_
