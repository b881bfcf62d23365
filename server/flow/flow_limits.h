// SPDX-License-Identifier: Apache-2.0
// FlowLimits: what a flow may do (docs/flows.md): a rate with a burst, a cap
// on attempts in flight, and a pause. The same type carries a cluster
// node's share of a flow's limits (flow/flow_shares.h).
#ifndef TICKWHEEL_SERVER_FLOW_FLOW_LIMITS_H_
#define TICKWHEEL_SERVER_FLOW_FLOW_LIMITS_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace tickwheel::server {

inline constexpr double kNoRateLimit = std::numeric_limits<double>::infinity();
inline constexpr std::int64_t kNoCap = std::numeric_limits<std::int64_t>::max();

// The default is no limit at all. A share of 0 (rate 0, cap 0: a cluster
// node holding none of a limited flow's budget) lets nothing start.
struct FlowLimits {
  // Attempts started per second, on average; kNoRateLimit: none.
  double rate_per_s = kNoRateLimit;
  // With a rate: how many attempts may start at once after a quiet spell
  // (the token bucket's size). In any window of T seconds at most
  // burst + rate_per_s * T attempts start.
  double burst = 0;
  // Attempts in flight at once (sent, not yet answered); kNoCap: no cap.
  std::int64_t max_in_flight = kNoCap;
  // Nothing starts while paused.
  bool paused = false;

  bool rate_limited() const { return rate_per_s != kNoRateLimit; }
  bool capped() const { return max_in_flight != kNoCap; }
  // Whether the flow needs a budget at all (a cluster shares only these).
  bool limited() const { return rate_limited() || capped(); }

  friend bool operator==(const FlowLimits&, const FlowLimits&) = default;
};

// The burst of a rate given without one: a tenth of a second's worth, at
// least 1.
inline double DefaultBurst(double rate_per_s) {
  return std::max(1.0, std::ceil(rate_per_s / 10));
}

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_FLOW_FLOW_LIMITS_H_
