// SPDX-License-Identifier: Apache-2.0
// Fuzzes ParseListQuery (server/api/list_query.h), the query string of
// GET /v1/timers: ?state=S&limit=N&after=CURSOR&show_headers=B&prefix=P
// &host=H, percent-decoded.
//
// Oracle, both ways: a query is accepted exactly when it is valid, as
// decided here (every parameter, percent-decoded here independently, is one
// of the six with a valid value, and state is given), and what is accepted
// holds the last value given of each; every refusal is a well-formed error
// (CheckError: a known reason, a message, 400, an error body that is valid
// JSON). Valid values: state one of the five; limit decimal digits only,
// 1..1000 (100 when not given); after "<time_ms>:<id>" with an optional '-'
// and digits fitting an int64 before the first ':' and a valid id after it;
// show_headers true/1 or false/0; prefix empty or id characters; host
// letters, digits, '.', '-', ':' and '_', at most 253, kept in lower case.
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <limits>
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

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// Decimal digits as a number, if at most `max`.
std::optional<std::uint64_t> Number(std::string_view digits, std::uint64_t max) {
  std::uint64_t n = 0;
  for (char c : digits) {
    const auto d = static_cast<std::uint64_t>(c - '0');
    if (n > (max - d) / 10) return std::nullopt;
    n = n * 10 + d;
  }
  return n;
}

// "<time_ms>:<id>" -> the time, or nullopt if not a valid cursor.
std::optional<std::int64_t> CursorTime(std::string_view after) {
  const std::size_t colon = after.find(':');
  if (colon == std::string_view::npos || !IsValidId(after.substr(colon + 1))) return std::nullopt;
  std::string_view time = after.substr(0, colon);
  const bool negative = !time.empty() && time[0] == '-';
  if (negative) time.remove_prefix(1);
  if (!AllDigits(time)) return std::nullopt;
  constexpr std::uint64_t kMax = std::numeric_limits<std::int64_t>::max();
  const auto n = Number(time, negative ? kMax + 1 : kMax);
  if (!n) return std::nullopt;
  return negative ? static_cast<std::int64_t>(0 - *n) : static_cast<std::int64_t>(*n);
}

bool IsState(std::string_view s) {
  return s == "pending" || s == "delivering" || s == "delivered" || s == "failed" ||
         s == "cancelled";
}

bool IsHost(std::string_view host) {
  if (host.size() > 253) return false;
  for (const char c : host) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != ':' &&
        c != '_') {
      return false;
    }
  }
  return true;
}

// Why the value of `key` is not valid, or "" if it is.
std::string InvalidParameter(const std::string& key, const std::string& value) {
  bool ok = false;
  if (key == "state") {
    ok = IsState(value);
  } else if (key == "limit") {
    const auto n = AllDigits(value) ? Number(value, 1000) : std::nullopt;
    ok = n && *n >= 1;
  } else if (key == "after") {
    ok = CursorTime(value).has_value();
  } else if (key == "show_headers") {
    ok = value == "true" || value == "1" || value == "false" || value == "0";
  } else if (key == "prefix") {
    ok = value.empty() || IsValidId(value);
  } else if (key == "host") {
    ok = IsHost(value);
  } else {
    return "parameter \"" + key + "\"";
  }
  return ok ? "" : key + "=\"" + value + "\"";
}

void FuzzOne(std::string_view query) {
  // The parameters as given, the last of each, and why the query is not
  // valid ("" if it is).
  std::string invalid;
  std::optional<std::string> state, limit, after, show_headers, prefix, host;
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
    if (!key || !value) {
      if (invalid.empty()) invalid = "a malformed %-escape";
      continue;
    }
    if (std::string why = InvalidParameter(*key, *value); !why.empty() && invalid.empty()) {
      invalid = why;
    }
    if (*key == "state") state = *value;
    if (*key == "limit") limit = *value;
    if (*key == "after") after = *value;
    if (*key == "show_headers") show_headers = *value;
    if (*key == "prefix") prefix = *value;
    if (*key == "host") host = *value;
  }
  if (invalid.empty() && !state) invalid = "no state";

  const auto parsed = server::ParseListQuery(query);
  if (!parsed.ok()) {
    CheckError(parsed.status(), "ParseListQuery");
    Require(!invalid.empty(), "refused a valid query: " + parsed.status().message(), query);
    return;
  }
  Require(invalid.empty(), "accepted " + invalid, query);
  const server::ListQuery& q = *parsed;
  Require(server::ParseState(*state) == q.state, "state is not the last one given", query);
  Require(q.limit == (limit ? *Number(*limit, 1000) : 100),
          "limit " + std::to_string(q.limit) + " is not the last one given (or 100)", query);
  Require(q.after.has_value() == after.has_value(), "after appeared or vanished", query);
  if (after) {
    Require(q.after->id == after->substr(after->find(':') + 1) &&
                q.after->time_ms == *CursorTime(*after),
            "after is not the last one given: " + std::to_string(q.after->time_ms) + ":" +
                q.after->id,
            query);
  }
  Require(q.show_headers == (show_headers && (*show_headers == "true" || *show_headers == "1")),
          "show_headers is not the last one given", query);
  Require(q.filter.id_prefix == prefix.value_or(""), "prefix is not the last one given", query);
  std::string lower_host;
  for (const char c : host.value_or("")) {
    lower_host += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  Require(q.filter.host == lower_host, "host is not the last one given, in lower case", query);
}

}  // namespace
}  // namespace tickwheel::testing

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  tickwheel::testing::FuzzOne(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
