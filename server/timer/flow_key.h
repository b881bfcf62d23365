// SPDX-License-Identifier: Apache-2.0
// Flow keys: every delivery belongs to a flow, the unit of flow control
// (server/flow/). A timer may name its flow; by default it is its target's
// "host:port", or its NATS subject's first token.
#ifndef TICKWHEEL_SERVER_TIMER_FLOW_KEY_H_
#define TICKWHEEL_SERVER_TIMER_FLOW_KEY_H_

#include <string>
#include <string_view>

#include "common/status.h"
#include "timer/http_url.h"

namespace tickwheel::server {

inline constexpr std::size_t kMaxFlowKeyLength = 260;  // a 253-byte host and ":65535"

// A flow key: 1..260 printable ASCII characters other than space, '/', '?',
// '#', '%', '"' and '\', not ending in ":pause" or ":resume" (the API's
// actions on /v1/flows/{key}). Ok if valid; else kInvalidArgument
// ("invalid_flow") naming `field` and saying what is wrong.
Status CheckFlowKey(std::string_view key, std::string_view field);

// The flow of a target that names none: a webhook's "host:port" (the host
// in lower case, an IPv6 literal in brackets, the port explicit: 80 and 443
// by default), or a NATS subject's first token ("orders" for
// "orders.eu.created"). Characters a flow key may not have are replaced by
// '_'. For a target that does not parse (only a damaged record), "invalid".
std::string DefaultFlowKey(std::string_view target);
// The same for a webhook whose URL is parsed already.
std::string DefaultFlowKey(const HttpUrl& url);

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_TIMER_FLOW_KEY_H_
