// SPDX-License-Identifier: Apache-2.0
// Where a timer is delivered. A record keeps its target as one string: the
// webhook URL, or kNatsPrefix followed by a JetStream subject.
#ifndef TICKWHEEL_SERVER_TIMER_TARGET_H_
#define TICKWHEEL_SERVER_TIMER_TARGET_H_

#include <string>
#include <string_view>

#include "common/status.h"

namespace tickwheel::server {

inline constexpr std::string_view kNatsPrefix = "nats:";

inline bool IsNatsTarget(std::string_view target) {
  return target.substr(0, kNatsPrefix.size()) == kNatsPrefix;
}
// REQUIRES: IsNatsTarget(target).
inline std::string_view NatsSubject(std::string_view target) {
  return target.substr(kNatsPrefix.size());
}

// A JetStream subject to publish to: tokens of printable characters separated
// by '.', no wildcards, not a JetStream or system API subject (starting with
// '$'), at most 256 characters. Ok if valid; else kInvalidArgument saying why.
Status CheckNatsSubject(std::string_view subject);

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_TIMER_TARGET_H_
