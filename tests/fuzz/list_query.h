// The query of GET /v1/timers (?state=...&limit=N&after=id), as a pure
// function the fuzzer can call.
//
// TODO(fuzz): this is the interface list_query_fuzz expects from server/api
// once api.cc is split. Today the parsing lives inside Api::List
// (server/api/api.cc), which cannot be compiled here (coroutines), so
// list_query_current.cc holds a copy of that loop. When server/api gains a
// ParseListQuery, delete list_query_current.cc and this declaration, and
// build list_query_fuzz against the server's.
#ifndef TICKWHEEL_TESTS_FUZZ_LIST_QUERY_H_
#define TICKWHEEL_TESTS_FUZZ_LIST_QUERY_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "api/api_error.h"
#include "store/timer_record.h"

namespace tickwheel::server {

struct ListQuery {
  TimerState state = TimerState::kPending;  // required
  std::size_t limit = 100;                  // 1..1000
  std::string after;                        // an id, or empty: from the start
};

// Parses the query string (without the '?'): `&`-separated key=value pairs,
// keys state, limit and after; no percent-decoding (ids need none). On
// failure a 400 naming the parameter.
ApiResult<ListQuery> ParseListQuery(std::string_view query);

}  // namespace tickwheel::server

#endif  // TICKWHEEL_TESTS_FUZZ_LIST_QUERY_H_
