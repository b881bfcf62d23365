// SPDX-License-Identifier: Apache-2.0
// The API's JSON answers: timers, batches, pages and errors.
#ifndef TICKWHEEL_SERVER_API_TIMER_JSON_H_
#define TICKWHEEL_SERVER_API_TIMER_JSON_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "store/timer_store.h"
#include "timer/timer_record.h"

namespace tickwheel::server {

// What a timer (or a schedule's occurrences) delivers: appends
// ,"retry":{...},"target":{...},"flow":...,"payload":... to `out`. Target
// header values, and the query of a target URL (ShownTarget), are shown as
// "***" unless `show_header_values` (an admin token asked with
// ?show_headers=true): they may hold a receiver's key.
void AppendDeliveryJson(std::string& out, const std::string& target,
                        const std::vector<std::pair<std::string, std::string>>& headers,
                        const std::string& flow, const std::string& payload,
                        std::uint32_t max_attempts, std::uint32_t backoff_ms,
                        bool show_header_values);

// A timer as GET answers it, its delivery as AppendDeliveryJson shows it,
// and its trace context (traceparent, tracestate) when it has one.
std::string TimerJson(const TimerRecord& record, bool show_header_values = false);
// `url` with its query (and fragment) as "***" unless `show_secrets`:
// "https://h/p?***".
std::string ShownTarget(std::string_view url, bool show_secrets);

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
