// SPDX-License-Identifier: Apache-2.0
// RFC 3339 text of an instant as a clock at a given UTC offset reads it:
// "2026-03-29T03:00:00+02:00", with ".250" only when the milliseconds are
// not zero, and the offset's seconds (":28") only when it has some (local
// mean times before ~1900, which RFC 3339 cannot express otherwise).
#ifndef TICKWHEEL_SERVER_SCHEDULE_RFC3339_H_
#define TICKWHEEL_SERVER_SCHEDULE_RFC3339_H_

#include <cstdint>
#include <string>

namespace tickwheel::server::recurrence_internal {

std::string FormatRfc3339(std::int64_t unix_ms, std::int32_t utc_offset_s);

}  // namespace tickwheel::server::recurrence_internal

#endif  // TICKWHEEL_SERVER_SCHEDULE_RFC3339_H_
