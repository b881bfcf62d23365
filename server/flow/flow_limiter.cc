// SPDX-License-Identifier: Apache-2.0
#include "flow/flow_limiter.h"

#include <algorithm>
#include <cmath>

namespace tickwheel::server {
namespace {

constexpr auto kTenth = std::chrono::milliseconds(100);

double Seconds(Duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

void FlowLimiter::SetLimits(const FlowLimits& limits, TimePoint now) {
  Refill(now);  // what accrued so far, at the old rate
  limits_ = limits;
  tokens_ = std::min(tokens_, CapacityNow());
  if (factor_ < 1 && limits_.rate_limited()) base_ = limits_.rate_per_s;
}

double FlowLimiter::RateNow() const {
  return factor_ < 1 ? base_ * factor_ : limits_.rate_per_s;
}

double FlowLimiter::CapacityNow() const {
  if (limits_.rate_limited()) {
    return factor_ < 1 ? std::min(limits_.burst, std::max(1.0, limits_.burst * factor_))
                       : limits_.burst;
  }
  return factor_ < 1 ? std::max(1.0, RateNow() / 10) : 0;
}

void FlowLimiter::Refill(TimePoint now) {
  if (!refilled_) {  // the bucket starts empty
    refilled_ = true;
    refilled_at_ = now;
    return;
  }
  if (now <= refilled_at_) return;
  const double rate = RateNow();
  if (rate != kNoRateLimit) {
    tokens_ = std::min(CapacityNow(), tokens_ + rate * Seconds(now - refilled_at_));
  }
  refilled_at_ = now;
}

void FlowLimiter::Recover(TimePoint now) {
  if (factor_ >= 1) return;
  TimePoint since = std::max(last_429_, recovered_at_);
  if (now - since < kRecoverEvery) return;
  Refill(now);
  while (now - since >= kRecoverEvery && factor_ < 1) {
    factor_ = std::min(1.0, factor_ + kRecoverStep);
    since += kRecoverEvery;
  }
  recovered_at_ = since;
  too_many_ = 0;  // a change: 429s count from here
  if (factor_ >= 1 - 1e-9) {
    factor_ = 1;
    base_ = 0;
  }
  tokens_ = std::min(tokens_, CapacityNow());
}

void FlowLimiter::CountStarts(TimePoint now, std::size_t n) {
  const std::int64_t tenth = now.time_since_epoch() / kTenth;
  if (tenth > starts_tenth_) {
    for (std::int64_t t = std::max(starts_tenth_ + 1, tenth - 9); t <= tenth; ++t) {
      starts_[static_cast<std::size_t>(t % 10)] = 0;
    }
    starts_tenth_ = tenth;
  }
  starts_[static_cast<std::size_t>(starts_tenth_ % 10)] += static_cast<std::int64_t>(n);
}

double FlowLimiter::RecentRate(TimePoint now) const {
  const std::int64_t tenth = now.time_since_epoch() / kTenth;
  std::int64_t sum = 0;
  for (std::int64_t k = 0; k < 10; ++k) {
    const std::int64_t t = starts_tenth_ - k;
    if (t > tenth - 10 && t <= tenth) sum += starts_[static_cast<std::size_t>(t % 10)];
  }
  return static_cast<double>(sum);
}

std::size_t FlowLimiter::Acquire(TimePoint now, std::size_t want) {
  Recover(now);
  Refill(now);
  if (limits_.paused || now < held_until_ || want == 0) return 0;
  std::size_t n = want;
  if (limits_.capped()) {
    n = std::min<std::size_t>(
        n, static_cast<std::size_t>(std::max<std::int64_t>(0, limits_.max_in_flight - in_flight_)));
  }
  if (const double rate = RateNow(); rate != kNoRateLimit) {
    // A group at a time (or what waits, if less): NextAt's promise.
    const double group = std::min(GroupTokens(rate, CapacityNow()), static_cast<double>(want));
    if (tokens_ < group) return 0;
    n = std::min(n, static_cast<std::size_t>(std::max(0.0, std::floor(tokens_))));
    tokens_ -= static_cast<double>(n);
  }
  in_flight_ += static_cast<std::int64_t>(n);
  if (n > 0) CountStarts(now, n);
  return n;
}

TimePoint FlowLimiter::NextAt(TimePoint now) const {
  if (limits_.paused) return TimePoint::max();
  if (limits_.capped() && in_flight_ >= limits_.max_in_flight) return TimePoint::max();
  TimePoint t = std::max(now, held_until_);
  const double rate = RateNow();
  if (rate == kNoRateLimit) return t;
  const double capacity = CapacityNow();
  if (rate <= 0 || capacity < 1) return TimePoint::max();  // no share of the budget
  const double need = GroupTokens(rate, capacity);
  const double have =
      refilled_ ? std::min(capacity, tokens_ + rate * Seconds(std::max(Duration(0), t - refilled_at_)))
                : 0;
  if (have >= need) return t;
  const double wait_s = (need - have) / rate;
  // Rounded up to the next microsecond, so the bucket holds the tokens then.
  const auto wait = std::chrono::duration_cast<Duration>(
      std::chrono::microseconds(static_cast<std::int64_t>(std::ceil(wait_s * 1e6)) + 1));
  return t + wait;
}

TimePoint FlowLimiter::StartAt(TimePoint now) {
  Recover(now);
  const double rate = RateNow();
  if (rate == kNoRateLimit || rate <= 0) return now;
  // The interval rounded up and the tolerance down: never a start early.
  const auto interval = std::chrono::ceil<Duration>(std::chrono::duration<double>(1 / rate));
  const auto tolerance = std::chrono::floor<Duration>(
      std::chrono::duration<double>(std::max(0.0, CapacityNow() - 1) / rate));
  // What was booked beyond now at another rate (the flow's was changed,
  // or 429s lowered it, or it recovered) stands for as many starts at this
  // one: a raised rate is not held to the old pace, a lowered one keeps to
  // the new from the booked starts on.
  if (paced_rate_ > 0 && paced_rate_ != rate && next_start_ > now) {
    next_start_ = now + std::chrono::ceil<Duration>(std::chrono::duration<double>(
                            Seconds(next_start_ - now) * paced_rate_ / rate));
  }
  paced_rate_ = rate;
  const TimePoint at = std::max(now, next_start_ - tolerance);
  next_start_ = std::max(next_start_, at) + interval;
  return at;
}

double FlowLimiter::GroupTokens(double rate, double capacity) const {
  return std::min(capacity, std::max(1.0, rate * Seconds(group_)));
}

void FlowLimiter::Release(std::size_t n) {
  in_flight_ = std::max<std::int64_t>(0, in_flight_ - static_cast<std::int64_t>(n));
}

void FlowLimiter::HoldUntil(TimePoint until) { held_until_ = std::max(held_until_, until); }

void FlowLimiter::OnTooManyRequests(TimePoint now) {
  Recover(now);
  Refill(now);
  last_429_ = now;
  // Answers in the second after a lowering are to requests sent before it:
  // they do not count towards the next one.
  if (factor_ < 1 && now - lowered_at_ < kLowerEvery) return;
  if (++too_many_ < kTooManyToLower) return;
  if (factor_ >= 1) {
    base_ = limits_.rate_limited() ? limits_.rate_per_s : std::max(1.0, RecentRate(now));
  }
  // Never below one attempt a second (or the base, if lower).
  const double floor = base_ > 1 ? 1 / base_ : 1;
  const double lowered = std::max(factor_ / 2, floor);
  too_many_ = 0;
  if (lowered >= 1) {  // a rate of one a second or less: nothing to lower
    base_ = 0;
    return;
  }
  factor_ = lowered;
  lowered_at_ = now;
  recovered_at_ = now;
  tokens_ = std::min(tokens_, CapacityNow());
}

double FlowLimiter::lowered_rate(TimePoint now) {
  Recover(now);
  return factor_ < 1 ? RateNow() : 0;
}

double FlowLimiter::rate(TimePoint now) {
  Recover(now);
  return RateNow();
}

double FlowLimiter::capacity(TimePoint now) {
  Recover(now);
  return CapacityNow();
}

}  // namespace tickwheel::server
