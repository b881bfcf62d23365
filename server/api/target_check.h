// SPDX-License-Identifier: Apache-2.0
// The SSRF guard at create: the webhook targets of new timers are looked up
// and their addresses checked (egress/target_policy.h) before anything is
// stored, so a denied target is a 400 rather than a dead letter later.
// The dispatcher checks again at every attempt; this check is for the
// client's sake, that one is the guard.
#ifndef TICKWHEEL_SERVER_API_TARGET_CHECK_H_
#define TICKWHEEL_SERVER_API_TARGET_CHECK_H_

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "common/status.h"
#include "egress/dns_resolver.h"
#include "egress/target_policy.h"
#include "timer/timer_state_machine.h"

namespace tickwheel::server {

struct TargetCheck {
  const TargetPolicy* policy = nullptr;  // null: no check
  DnsResolver* resolver = nullptr;       // null: names are not looked up
  // How long a create waits for its lookups (all at once, in the
  // resolver's check lane); a name that does not resolve in time (or at
  // all) is accepted: the attempt checks it again.
  std::chrono::milliseconds patience{std::chrono::seconds(2)};
};

// Checks the URL targets of `specs` (each host once). kInvalidArgument
// "target_denied" naming the field ("target.url", "timers[3].target.url")
// if one is denied. `batch`: the specs are a batch's (for field names).
boost::asio::awaitable<Status> CheckTargets(const TargetCheck& check,
                                            const std::vector<const TimerSpec*>& specs,
                                            bool batch);

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_API_TARGET_CHECK_H_
