// SPDX-License-Identifier: Apache-2.0
// Timers and other answers printed for people (the commands' default;
// --json prints the server's JSON as is). Times are RFC 3339 in UTC, with
// the Z, everywhere.
#ifndef TICKWHEEL_APP_TIMER_OUTPUT_H_
#define TICKWHEEL_APP_TIMER_OUTPUT_H_

#include <boost/json.hpp>
#include <cstdint>
#include <string>

namespace tickwheel::app {

// "2026-11-23T10:47:40.087Z (in 29.5s)" / "(3.0s ago)" for Unix ms, against
// `now_ms`.
std::string FormatTimeAndDelta(std::int64_t ms, std::int64_t now_ms);

// One timer, a field a line. Only a pending or delivering timer's fire time
// says how far away it is.
void PrintTimer(const boost::json::object& t, std::int64_t now_ms);

// The header of the table of timers, then rows of them.
void PrintTableHeader();
void PrintTableRows(const boost::json::object& page);

// Any JSON object a field a line, nested objects indented ("counts:",
// "  pending: 3").
void PrintFields(const boost::json::object& o, int indent = 0);

}  // namespace tickwheel::app

#endif  // TICKWHEEL_APP_TIMER_OUTPUT_H_
