// SPDX-License-Identifier: Apache-2.0
// FlowLimiter on the server's manual clock: rate and burst over every
// window, the in-flight cap, pause, Retry-After holds, and the lower rate
// after repeated 429s with its recovery.
#include "flow/flow_limiter.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "common/server_clock.h"

namespace tickwheel::server {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::seconds;
constexpr std::int64_t kStart = 1'800'000'000'000;

// The most of `times` (in order) in any window of `w`, sliding over each.
std::size_t MostInAnyWindow(const std::vector<TimePoint>& times, Duration w) {
  std::size_t best = 0;
  std::size_t lo = 0;
  for (std::size_t hi = 0; hi < times.size(); ++hi) {
    while (times[hi] - times[lo] >= w) ++lo;
    best = std::max(best, hi - lo + 1);
  }
  return best;
}

// A greedy sender on manual time: whenever the limiter allows, it starts as
// many attempts as it may (each answered at once unless `hold` says so), and
// records when each started.
struct Sender {
  ManualServerClock clock{kStart};
  FlowLimiter limiter;
  std::vector<TimePoint> starts;

  explicit Sender(const FlowLimits& limits) { limiter.SetLimits(limits, clock.steady().Now()); }
  TimePoint now() { return clock.steady().Now(); }
  // Runs for `d`, jumping to each NextAt (or by `step` at most), and returns
  // how many started.
  std::size_t RunFor(Duration d, Duration step = milliseconds(7), bool answer = true) {
    const TimePoint end = now() + d;
    std::size_t started = 0;
    while (now() < end) {
      const std::size_t n = limiter.Acquire(now(), 1'000'000);
      for (std::size_t i = 0; i < n; ++i) starts.push_back(now());
      if (answer) limiter.Release(n);
      started += n;
      const TimePoint next = std::min({limiter.NextAt(now()), now() + step, end});
      clock.Advance(std::max<Duration>(next - now(), Duration(1)));
    }
    return started;
  }
  std::size_t MaxInWindow(Duration w) const { return MostInAnyWindow(starts, w); }
};

TEST(FlowLimiterTest, BucketStartsEmptyAndFillsAtTheRateUpToTheBurst) {
  Sender s({.rate_per_s = 100, .burst = 10});
  EXPECT_EQ(s.limiter.Acquire(s.now(), 100), 0u);  // nothing of its own
  s.clock.Advance(milliseconds(50));
  EXPECT_EQ(s.limiter.Acquire(s.now(), 100), 5u);
  s.clock.Advance(seconds(5));                      // a quiet spell
  EXPECT_EQ(s.limiter.Acquire(s.now(), 100), 10u);  // the burst, not 500
  EXPECT_EQ(s.limiter.Acquire(s.now(), 100), 0u);
}

TEST(FlowLimiterTest, NeverMoreThanRatePlusBurstInAnySecond) {
  struct Case {
    double rate, burst;
  };
  for (Case c : {Case{1000, 100}, Case{1000, 1}, Case{200, 50}, Case{7, 3}, Case{0.5, 1}}) {
    Sender s({.rate_per_s = c.rate, .burst = c.burst});
    s.clock.Advance(seconds(1));  // a full bucket first: the worst case
    std::mt19937 rng(42);
    for (int i = 0; i < 30; ++i) {
      s.RunFor(milliseconds(100 + rng() % 400), microseconds(100 + rng() % 20'000));
      s.clock.Advance(milliseconds(rng() % 300));  // idle now and then: tokens build up
    }
    const double bound = c.burst + c.rate;
    EXPECT_LE(static_cast<double>(s.MaxInWindow(seconds(1))), bound) << c.rate << "/" << c.burst;
    EXPECT_LE(static_cast<double>(s.MaxInWindow(seconds(3))), c.burst + 3 * c.rate);
  }
}

TEST(FlowLimiterTest, ABusyFlowSendsAtItsRate) {
  Sender s({.rate_per_s = 1000, .burst = 100});
  const std::size_t sent = s.RunFor(seconds(10));
  EXPECT_GE(sent, 9'900u);  // 10 s at 1000/s, from an empty bucket
  EXPECT_LE(sent, 10'000u);
  // Released in small groups (about 10 ms' worth), not one wake-up each.
  Sender fast({.rate_per_s = 1000, .burst = 100});
  fast.clock.Advance(milliseconds(500));
  fast.limiter.Acquire(fast.now(), 1'000'000);
  const TimePoint next = fast.limiter.NextAt(fast.now());
  EXPECT_GE(next, fast.now() + milliseconds(10));
  EXPECT_LE(next, fast.now() + milliseconds(10) + microseconds(5));
}

// Acquire keeps NextAt's promise: nothing until a group's tokens are there
// (or as many as wait, if fewer), so a slot given back now and then does not
// let the flow go one attempt at a time. A cluster node's groups are larger.
TEST(FlowLimiterTest, AFastFlowGoesAGroupAtATime) {
  Sender s({.rate_per_s = 1000, .burst = 100});
  s.clock.Advance(milliseconds(5));                 // 5 tokens: half a group
  EXPECT_EQ(s.limiter.Acquire(s.now(), 100), 0u);
  EXPECT_EQ(s.limiter.Acquire(s.now(), 3), 3u);     // only 3 wait: they go
  s.clock.Advance(milliseconds(8));                 // 10 tokens
  EXPECT_EQ(s.limiter.Acquire(s.now(), 100), 10u);

  Sender node({.rate_per_s = 333, .burst = 33});
  node.limiter.SetGroup(FlowLimiter::kClusterGroup);
  node.clock.Advance(milliseconds(40));             // 13 tokens of a group of 16.65
  EXPECT_EQ(node.limiter.Acquire(node.now(), 100), 0u);
  EXPECT_GE(node.limiter.NextAt(node.now()), node.now() + milliseconds(10));
  EXPECT_LE(node.limiter.NextAt(node.now()), node.now() + milliseconds(10) + microseconds(5));
  node.clock.Advance(milliseconds(11));
  EXPECT_EQ(node.limiter.Acquire(node.now(), 100), 16u);
  const std::size_t sent = node.RunFor(seconds(10));
  EXPECT_GE(sent, 3'300u);  // the rate, however it is grouped
  EXPECT_LE(sent, 3'330u + 33u);
}

// Releases reach the send after a claim whose store write takes 0-40 ms:
// the sends, paced by StartAt, keep rate + burst in any second (the raw
// arrivals need not), none goes before it arrives, and none waits much
// longer than the claims vary.
TEST(FlowLimiterTest, SendsPacedAtTheStartKeepTheRateWhateverTheClaimsTake) {
  struct Case {
    double rate, burst;
  };
  bool arrivals_exceeded = false;
  for (Case c : {Case{1000, 100}, Case{333, 33}, Case{200, 1}, Case{7, 3}}) {
    Sender s({.rate_per_s = c.rate, .burst = c.burst});
    s.clock.Advance(seconds(1));
    s.RunFor(seconds(20));  // released greedily, as fast as the gate allows
    std::mt19937 rng(7);
    std::vector<TimePoint> arrivals;
    for (TimePoint released : s.starts) arrivals.push_back(released + microseconds(rng() % 40'000));
    std::sort(arrivals.begin(), arrivals.end());
    std::vector<TimePoint> sent;
    FlowLimiter pacer;
    pacer.SetLimits({.rate_per_s = c.rate, .burst = c.burst}, arrivals.front());
    Duration longest(0);
    for (TimePoint arrived : arrivals) {
      const TimePoint at = pacer.StartAt(arrived);
      ASSERT_GE(at, arrived);
      longest = std::max(longest, at - arrived);
      sent.push_back(at);
    }
    arrivals_exceeded =
        arrivals_exceeded || MostInAnyWindow(arrivals, seconds(1)) > c.rate + c.burst;
    EXPECT_LE(static_cast<double>(MostInAnyWindow(sent, seconds(1))), c.rate + c.burst)
        << c.rate << "/" << c.burst;
    EXPECT_LE(static_cast<double>(MostInAnyWindow(sent, seconds(3))), 3 * c.rate + c.burst);
    EXPECT_LE(longest, milliseconds(40) + std::chrono::duration_cast<Duration>(
                                              std::chrono::duration<double>(2 / c.rate)))
        << c.rate << "/" << c.burst;
  }
  EXPECT_TRUE(arrivals_exceeded);  // what the pacing is for
  FlowLimiter unlimited;
  unlimited.SetLimits({}, TimePoint{});
  const TimePoint t = TimePoint{} + seconds(5);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(unlimited.StartAt(t), t);
}

// A change of rate applies to the sends not yet booked: a flow raised from
// one send in 2 s is not held to that pace, and a lowered one spaces its
// next sends at the new interval from the last one booked.
TEST(FlowLimiterTest, PacedSendsFollowAChangeOfRate) {
  const TimePoint t0 = TimePoint{} + seconds(10);
  FlowLimiter raised;
  raised.SetLimits({.rate_per_s = 0.5, .burst = 1}, t0);
  EXPECT_EQ(raised.StartAt(t0), t0);  // the next is booked 2 s on
  const TimePoint later = t0 + milliseconds(1);
  raised.SetLimits({.rate_per_s = 1000, .burst = 1}, later);
  EXPECT_LE(raised.StartAt(later), later + milliseconds(2));

  FlowLimiter lowered;
  lowered.SetLimits({.rate_per_s = 1000, .burst = 1}, t0);
  std::vector<TimePoint> sent;
  for (int i = 0; i < 100; ++i) sent.push_back(lowered.StartAt(t0));  // booked over 100 ms
  lowered.SetLimits({.rate_per_s = 10, .burst = 1}, t0);
  const std::size_t booked = sent.size();
  for (int i = 0; i < 20; ++i) sent.push_back(lowered.StartAt(t0 + milliseconds(i)));
  for (std::size_t i = booked; i < sent.size(); ++i) {
    EXPECT_GE(sent[i] - sent[i - 1], milliseconds(100)) << "send " << i;
  }
}

TEST(FlowLimiterTest, InFlightCapHoldsUntilAttemptsEnd) {
  Sender s({.max_in_flight = 4});
  EXPECT_EQ(s.limiter.Acquire(s.now(), 10), 4u);
  EXPECT_EQ(s.limiter.in_flight(), 4);
  EXPECT_EQ(s.limiter.Acquire(s.now(), 10), 0u);
  EXPECT_EQ(s.limiter.NextAt(s.now()), TimePoint::max());  // waits for a Release
  s.limiter.Release(1);
  EXPECT_EQ(s.limiter.NextAt(s.now()), s.now());
  EXPECT_EQ(s.limiter.Acquire(s.now(), 10), 1u);
  // A smaller cap (a config change, a smaller share) lets nothing start
  // until enough attempts ended.
  s.limiter.SetLimits({.max_in_flight = 2}, s.now());
  s.limiter.Release(2);
  EXPECT_EQ(s.limiter.Acquire(s.now(), 10), 0u);
  s.limiter.Release(1);
  EXPECT_EQ(s.limiter.Acquire(s.now(), 10), 1u);
}

TEST(FlowLimiterTest, RateAndCapTogether) {
  Sender s({.rate_per_s = 100, .burst = 20, .max_in_flight = 3});
  s.clock.Advance(seconds(1));
  EXPECT_EQ(s.limiter.Acquire(s.now(), 50), 3u);  // the cap, though 20 tokens wait
  s.limiter.Release(3);
  EXPECT_EQ(s.limiter.Acquire(s.now(), 50), 3u);
}

TEST(FlowLimiterTest, NothingStartsWhilePaused) {
  Sender s({.rate_per_s = 100, .burst = 10, .paused = true});
  s.clock.Advance(seconds(2));
  EXPECT_EQ(s.limiter.Acquire(s.now(), 10), 0u);
  EXPECT_EQ(s.limiter.NextAt(s.now()), TimePoint::max());
  s.limiter.SetLimits({.rate_per_s = 100, .burst = 10}, s.now());  // resume
  EXPECT_EQ(s.limiter.Acquire(s.now(), 100), 10u);  // the bucket filled meanwhile, to the burst
  Sender cap({.max_in_flight = 2, .paused = true});
  EXPECT_EQ(cap.limiter.Acquire(cap.now(), 10), 0u);
}

TEST(FlowLimiterTest, RetryAfterHoldsTheWholeFlow) {
  Sender s({});  // no limits at all
  EXPECT_EQ(s.limiter.Acquire(s.now(), 5), 5u);
  const TimePoint until = s.now() + seconds(3);
  s.limiter.HoldUntil(until);
  s.limiter.HoldUntil(s.now() + seconds(1));  // a shorter one does not cut it short
  EXPECT_EQ(s.limiter.Acquire(s.now(), 5), 0u);
  EXPECT_EQ(s.limiter.NextAt(s.now()), until);
  s.clock.Advance(milliseconds(2999));
  EXPECT_EQ(s.limiter.Acquire(s.now(), 5), 0u);
  s.clock.Advance(milliseconds(1));
  EXPECT_EQ(s.limiter.Acquire(s.now(), 5), 5u);
}

TEST(FlowLimiterTest, RepeatedTooManyRequestsHalveTheRateAndItRecovers) {
  Sender s({.rate_per_s = 100, .burst = 10});
  s.limiter.OnTooManyRequests(s.now());
  s.limiter.OnTooManyRequests(s.now());
  EXPECT_EQ(s.limiter.lowered_rate(s.now()), 0);  // two are not "repeated"
  s.limiter.OnTooManyRequests(s.now());
  EXPECT_NEAR(s.limiter.lowered_rate(s.now()), 50, 1e-9);
  EXPECT_NEAR(s.limiter.capacity(s.now()), 5, 1e-9);
  s.clock.Advance(milliseconds(900));
  for (int i = 0; i < 6; ++i) s.limiter.OnTooManyRequests(s.now());
  EXPECT_NEAR(s.limiter.lowered_rate(s.now()), 50, 1e-9);  // at most once a second
  s.clock.Advance(milliseconds(100));
  for (int i = 0; i < 3; ++i) s.limiter.OnTooManyRequests(s.now());
  EXPECT_NEAR(s.limiter.lowered_rate(s.now()), 25, 1e-9);
  const TimePoint last_429 = s.now();
  // What it sends follows the lower rate (and the smaller burst).
  s.starts.clear();
  s.RunFor(seconds(1), milliseconds(1));
  EXPECT_LE(s.starts.size(), 25u + 3u);
  // Recovery: a tenth of the rate back every 2 s without a 429.
  s.clock.Advance(last_429 + milliseconds(1999) - s.now());
  EXPECT_NEAR(s.limiter.lowered_rate(s.now()), 25, 1e-9);
  s.clock.Advance(milliseconds(1));
  EXPECT_NEAR(s.limiter.lowered_rate(s.now()), 35, 1e-9);
  s.limiter.OnTooManyRequests(s.now());  // one 429 restarts the quiet period
  s.clock.Advance(milliseconds(1999));
  EXPECT_NEAR(s.limiter.lowered_rate(s.now()), 35, 1e-9);
  s.clock.Advance(milliseconds(1));
  EXPECT_NEAR(s.limiter.lowered_rate(s.now()), 45, 1e-9);
  s.clock.Advance(seconds(12));
  EXPECT_EQ(s.limiter.lowered_rate(s.now()), 0);  // whole again
  EXPECT_DOUBLE_EQ(s.limiter.rate(s.now()), 100);
  EXPECT_DOUBLE_EQ(s.limiter.capacity(s.now()), 10);
}

TEST(FlowLimiterTest, AFlowWithoutARateIsLoweredFromWhatItWasSending) {
  Sender s({});
  for (int i = 0; i < 10; ++i) {  // 400 attempts a second
    s.limiter.Acquire(s.now(), 40);
    s.clock.Advance(milliseconds(100));
  }
  for (int i = 0; i < 3; ++i) s.limiter.OnTooManyRequests(s.now());
  const double lowered = s.limiter.lowered_rate(s.now());
  EXPECT_NEAR(lowered, 200, 40);  // half of ~400 a second
  s.starts.clear();
  s.RunFor(seconds(2), milliseconds(1));
  EXPECT_LE(static_cast<double>(s.MaxInWindow(seconds(1))), lowered + lowered / 10);
  s.clock.Advance(seconds(40));
  EXPECT_EQ(s.limiter.lowered_rate(s.now()), 0);
  EXPECT_EQ(s.limiter.rate(s.now()), kNoRateLimit);
}

TEST(FlowLimiterTest, NeverLoweredBelowOneASecond) {
  Sender s({.rate_per_s = 4, .burst = 1});
  for (int round = 0; round < 5; ++round) {
    for (int i = 0; i < 3; ++i) s.limiter.OnTooManyRequests(s.now());
    s.clock.Advance(milliseconds(1100));
    for (int i = 0; i < 3; ++i) s.limiter.OnTooManyRequests(s.now());  // keeps it from recovering
  }
  EXPECT_DOUBLE_EQ(s.limiter.lowered_rate(s.now()), 1);
  Sender slow({.rate_per_s = 0.5, .burst = 1});
  for (int i = 0; i < 3; ++i) slow.limiter.OnTooManyRequests(slow.now());
  EXPECT_EQ(slow.limiter.lowered_rate(slow.now()), 0);
}

TEST(FlowLimiterTest, AShareOfNothingLetsNothingStart) {
  Sender s({.rate_per_s = 0, .burst = 0, .max_in_flight = 0});
  s.clock.Advance(seconds(5));
  EXPECT_EQ(s.limiter.Acquire(s.now(), 10), 0u);
  EXPECT_EQ(s.limiter.NextAt(s.now()), TimePoint::max());
}

TEST(FlowLimiterTest, LargerLimitsBringNoTokensSmallerOnesDropThem) {
  Sender s({.rate_per_s = 100, .burst = 50});
  s.clock.Advance(seconds(1));  // 50 tokens
  s.limiter.SetLimits({.rate_per_s = 100, .burst = 5}, s.now());
  EXPECT_EQ(s.limiter.Acquire(s.now(), 100), 5u);
  s.limiter.SetLimits({.rate_per_s = 1000, .burst = 500}, s.now());
  EXPECT_EQ(s.limiter.Acquire(s.now(), 100), 0u);  // raised: nothing at once
  s.clock.Advance(milliseconds(10));
  EXPECT_EQ(s.limiter.Acquire(s.now(), 100), 10u);  // it fills at the new rate
}

}  // namespace
}  // namespace tickwheel::server
