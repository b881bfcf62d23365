// SPDX-License-Identifier: Apache-2.0
// The API's JSON answers: timers, batches, pages and errors.
#ifndef TICKWHEEL_SERVER_API_TIMER_JSON_H_
#define TICKWHEEL_SERVER_API_TIMER_JSON_H_

#include <string>
#include <vector>

#include "common/status.h"
#include "store/timer_store.h"
#include "timer/timer_record.h"

namespace tickwheel::server {

// A timer as GET answers it. Target header values are shown as "***"
// unless `show_header_values`.
std::string TimerJson(const TimerRecord& record, bool show_header_values = false);

// The answer of a batch create: {"timers": [{"id", "state", "fire_at_ms",
// "created"}]}.
std::string BatchJson(const std::vector<TimerRecord>& records, const std::vector<char>& created);

// A list page: {"timers": [...], "next_after": cursor?}; header values as
// in TimerJson.
std::string PageJson(const ListPage& page, bool show_header_values = false);

// {"error": {"code", "message", "field"?}}, and the HTTP status of `status`.
std::string ErrorJson(const Status& status);
int HttpStatusOf(const Status& status);

// A list cursor as clients pass it back: "<time_ms>:<id>".
std::string EncodeCursor(const ListCursor& cursor);

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_API_TIMER_JSON_H_
