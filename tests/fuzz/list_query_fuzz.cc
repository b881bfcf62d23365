// Fuzzes ParseListQuery (server/api/list_query.h), the query string of
// GET /v1/timers: ?state=S&limit=N&after=CURSOR, percent-decoded.
//
// Oracle: any bytes give a query or an error Status (CheckError: a known
// reason, a message, 400, an error body that is valid JSON). What is
// accepted names a state (one of the five), a limit of 1..1000 (100 when not
// given) and, if `after` is given, a cursor "<time_ms>:<id>" with a valid id
// and the time that the value's digits say; every parameter of the
// query, percent-decoded here independently, is state, limit or after.
#include <cctype>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "api/list_query.h"
#include "decoder_checks.h"

namespace tickwheel::testing {
namespace {

void Require(bool ok, const std::string& what, std::string_view query) {
  if (!ok) FuzzFail("ParseListQuery(\"" + std::string(query) + "\"): " + what);
}

// %XX and '+' decoded; nullopt for a malformed escape.
std::optional<std::string> Decode(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] != '%') {
      out += s[i];
    } else {
      if (i + 2 >= s.size()) return std::nullopt;
      int v = 0;
      for (int k = 1; k <= 2; ++k) {
        const char c = s[i + k];
        const int d = (c >= '0' && c <= '9')   ? c - '0'
                      : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                      : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                               : -1;
        if (d < 0) return std::nullopt;
        v = v * 16 + d;
      }
      out += static_cast<char>(v);
      i += 2;
    }
  }
  return out;
}

void FuzzOne(std::string_view query) {
  const auto parsed = server::ParseListQuery(query);
  if (!parsed.ok()) return CheckError(parsed.status(), "ParseListQuery");
  const server::ListQuery& q = *parsed;
  Require(q.limit >= 1 && q.limit <= 1000, "limit " + std::to_string(q.limit), query);
  std::optional<std::string> state;
  bool has_limit = false;
  std::optional<std::string> after;
  std::size_t start = 0;
  while (start < query.size()) {
    std::size_t amp = query.find('&', start);
    if (amp == std::string_view::npos) amp = query.size();
    const std::string_view pair = query.substr(start, amp - start);
    start = amp + 1;
    if (pair.empty()) continue;
    const std::size_t eq = pair.find('=');
    const auto key = Decode(pair.substr(0, eq));
    const auto value =
        Decode(eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1));
    Require(key && value, "accepted a malformed %-escape", query);
    Require(*key == "state" || *key == "limit" || *key == "after",
            "accepted parameter \"" + *key + "\"", query);
    if (*key == "state") state = *value;
    has_limit = has_limit || *key == "limit";
    if (*key == "after") after = *value;
  }
  Require(state.has_value(), "accepted without a state", query);
  Require(server::ParseState(*state) == q.state, "state is not the last one given", query);
  Require(has_limit || q.limit == 100, "default limit is not 100", query);
  Require(q.after.has_value() == after.has_value(), "after appeared or vanished", query);
  if (after) {
    Require(IsValidId(q.after->id), "after has an invalid id", query);
    const std::size_t colon = after->find(':');
    Require(colon != std::string::npos && after->substr(colon + 1) == q.after->id,
            "after \"" + *after + "\" is not <time>:<id>", query);
    const std::string time = after->substr(0, colon);
    errno = 0;
    char* end = nullptr;
    const long long t = std::strtoll(time.c_str(), &end, 10);
    Require(!time.empty() && (std::isdigit(static_cast<unsigned char>(time[0])) || time[0] == '-') &&
                end == time.c_str() + time.size() && errno == 0 && t == q.after->time_ms,
            "after's time \"" + time + "\" is not " + std::to_string(q.after->time_ms), query);
  }
}

}  // namespace
}  // namespace tickwheel::testing

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  tickwheel::testing::FuzzOne(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
