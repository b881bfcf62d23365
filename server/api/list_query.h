// SPDX-License-Identifier: Apache-2.0
// The query strings of GET /v1/timers (?state=S&limit=N&after=CURSOR
// &show_headers=B&prefix=P&host=H) and GET /v1/timers/{id}
// (?show_headers=B).
#ifndef TICKWHEEL_SERVER_API_LIST_QUERY_H_
#define TICKWHEEL_SERVER_API_LIST_QUERY_H_

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "store/timer_store.h"
#include "timer/timer_record.h"

namespace tickwheel::server {

struct ListQuery {
  TimerState state = TimerState::kPending;
  std::size_t limit = 100;             // 1..1000
  std::optional<ListCursor> after;     // a previous page's next_after
  bool show_headers = false;           // asked for target header values
  ListFilter filter;                   // prefix= (id prefix), host= (target host)
};

// The filters the console searches by (a list's prefix= and host=, a bulk
// operation's "prefix" and "host"): an id prefix of id characters, a host
// name or address (lower-cased). kInvalidArgument naming `field`.
Status ValidateIdPrefix(std::string_view prefix, std::string_view field);
Result<std::string> NormalizeHost(std::string_view host, std::string_view field);

// Parses a query string (without '?'): percent-decoded, every parameter
// known, state given. kInvalidArgument names the parameter that is wrong.
Result<ListQuery> ParseListQuery(std::string_view query);

// The query of GET /v1/timers/{id}: show_headers=true|false or nothing;
// true if header values are asked for.
Result<bool> ParseGetQuery(std::string_view query);

// "<time_ms>:<id>", as EncodeCursor (api/timer_json.h) writes it.
Result<ListCursor> DecodeCursor(std::string_view text);

// %XX decoded, and '+' as a space when `plus_is_space` (a query string's
// form encoding; in a path '+' is itself); nullopt for a malformed escape.
std::optional<std::string> PercentDecode(std::string_view text, bool plus_is_space = true);

// Calls `on(key, value)` for each decoded parameter of a query string;
// stops at its first error.
Status ForEachParameter(std::string_view query,
                        const std::function<Status(const std::string&, const std::string&)>& on);
// A query parameter's true|1 or false|0; kInvalidArgument naming `key`.
Result<bool> ParseBool(const std::string& key, const std::string& value);

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_API_LIST_QUERY_H_
