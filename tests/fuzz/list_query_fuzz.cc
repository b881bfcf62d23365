// SPDX-License-Identifier: Apache-2.0
// Fuzzes ParseListQuery (server/api/list_query.h), the query string of
// GET /v1/timers: ?state=S&limit=N&after=CURSOR&show_headers=B&prefix=P
// &host=H, percent-decoded.
//
// Oracle: any bytes give a query or an error Status (CheckError: a known
// reason, a message, 400, an error body that is valid JSON). What is
// accepted names a state (one of the five), a limit of 1..1000 (100 when not
// given) and, if `after` is given, a cursor "<time_ms>:<id>" with a valid id
// and the time that the value's digits say; show_headers is true/1 or
// false/0; the id prefix is empty or id characters; the host is letters,
// digits, '.', '-', ':' and '_', at most 253, kept in lower case; the last
// value of each parameter counts. Every parameter of the query,
// percent-decoded here independently, is one of those six.
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
  std::optional<std::string> after, show_headers, prefix, host;
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
    Require(*key == "state" || *key == "limit" || *key == "after" || *key == "show_headers" ||
                *key == "prefix" || *key == "host",
            "accepted parameter \"" + *key + "\"", query);
    if (*key == "state") state = *value;
    has_limit = has_limit || *key == "limit";
    if (*key == "after") after = *value;
    if (*key == "show_headers") show_headers = *value;
    if (*key == "prefix") prefix = *value;
    if (*key == "host") host = *value;
  }
  if (show_headers) {
    Require(*show_headers == "true" || *show_headers == "1" || *show_headers == "false" ||
                *show_headers == "0",
            "accepted show_headers=\"" + *show_headers + "\"", query);
  }
  Require(q.show_headers == (show_headers && (*show_headers == "true" || *show_headers == "1")),
          "show_headers is not the last one given", query);
  Require(q.filter.id_prefix == prefix.value_or(""), "prefix is not the last one given", query);
  Require(q.filter.id_prefix.empty() || IsValidId(q.filter.id_prefix),
          "accepted prefix \"" + q.filter.id_prefix + "\"", query);
  std::string lower_host;
  for (const char c : host.value_or("")) {
    Require(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == ':' ||
                c == '_',
            "accepted host \"" + *host + "\"", query);
    lower_host += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  Require(lower_host.size() <= 253, "accepted a host over 253 characters", query);
  Require(q.filter.host == lower_host, "host is not the last one given, in lower case", query);
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
