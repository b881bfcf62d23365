// TODO(fuzz): a copy of the query loop of Api::List (server/api/api.cc at
// fae0c5e), errors as Api::List builds them; see list_query.h. Delete when
// server/api has its own ParseListQuery.
#include <charconv>

#include "api/timer_request.h"
#include "list_query.h"

namespace tickwheel::server {

ApiResult<ListQuery> ParseListQuery(std::string_view query) {
  auto error = [](std::string code, std::string message, std::string field) {
    return ApiError{400, std::move(code), std::move(message), std::move(field)};
  };
  std::optional<TimerState> state;
  ListQuery out;
  while (!query.empty()) {
    const std::size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const std::size_t eq = pair.find('=');
    std::string_view key = pair.substr(0, eq);
    std::string_view value =
        eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1);
    if (key == "state") {
      state = ParseState(value);
      if (!state) {
        return error("invalid_value",
                     "state must be pending, delivering, delivered, failed or "
                     "cancelled, not \"" + std::string(value) + "\"",
                     "state");
      }
    } else if (key == "limit") {
      std::size_t n = 0;
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec != std::errc() || end != value.data() + value.size() || n < 1 || n > 1000) {
        return error("invalid_value", "limit must be an integer 1..1000", "limit");
      }
      out.limit = n;
    } else if (key == "after") {
      if (auto e = ValidateId(value, "after")) return *e;
      out.after = std::string(value);
    } else {
      return error("unknown_field",
                   "unknown query parameter \"" + std::string(key) +
                       "\"; known: state, limit, after",
                   std::string(key));
    }
  }
  if (!state) {
    return error("missing_field",
                 "give ?state=pending|delivering|delivered|failed|cancelled", "state");
  }
  out.state = *state;
  return out;
}

}  // namespace tickwheel::server
