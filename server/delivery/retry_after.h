// SPDX-License-Identifier: Apache-2.0
// The Retry-After header of a 429 or 503 answer (RFC 9110, 10.2.3).
#ifndef TICKWHEEL_SERVER_DELIVERY_RETRY_AFTER_H_
#define TICKWHEEL_SERVER_DELIVERY_RETRY_AFTER_H_

#include <cstdint>
#include <ctime>
#include <string_view>

namespace tickwheel::server {

// How long to wait, in ms, per `value`: delay-seconds ("120") or an
// HTTP-date ("Wed, 21 Oct 2026 07:28:00 GMT") read against `now` (Unix
// seconds). 0 for a date in the past, and for anything unreadable.
std::int64_t RetryAfterMs(std::string_view value, std::time_t now);

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_DELIVERY_RETRY_AFTER_H_
