// SPDX-License-Identifier: Apache-2.0
#include "api/list_query.h"

#include <charconv>

#include "api/timer_request.h"

namespace tickwheel::server {

std::optional<std::string> PercentDecode(std::string_view text, bool plus_is_space) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '+' && plus_is_space) {
      out += ' ';
    } else if (text[i] != '%') {
      out += text[i];
    } else {
      if (i + 2 >= text.size()) return std::nullopt;
      const int hi = hex(text[i + 1]);
      const int lo = hex(text[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    }
  }
  return out;
}

Result<ListCursor> DecodeCursor(std::string_view text) {
  const Status bad = Status::Invalid(
      "invalid_value", "after must be the next_after of a previous page (\"<time>:<id>\")",
      "after");
  const std::size_t colon = text.find(':');
  if (colon == std::string_view::npos || colon == 0) return bad;
  ListCursor cursor;
  auto [end, ec] = std::from_chars(text.data(), text.data() + colon, cursor.time_ms);
  if (ec != std::errc() || end != text.data() + colon) return bad;
  cursor.id = std::string(text.substr(colon + 1));
  if (!ValidateId(cursor.id, "after").ok()) return bad;
  return cursor;
}

Status ValidateIdPrefix(std::string_view prefix, std::string_view field) {
  if (prefix.empty()) return Status::Ok();
  return ValidateId(prefix, field);
}

Result<std::string> NormalizeHost(std::string_view host, std::string_view field) {
  std::string out;
  if (host.size() > 253) {
    return Status::Invalid("invalid_value", std::string(field) + " is longer than 253 characters",
                           std::string(field));
  }
  for (char c : host) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '-' || c == ':' || c == '_';
    if (!ok) {
      return Status::Invalid("invalid_value",
                             std::string(field) +
                                 " must be a host name or an IP address (letters, digits, '.', "
                                 "'-', ':'), without a scheme, port or path",
                             std::string(field));
    }
    out += (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  }
  return out;
}

Status ForEachParameter(std::string_view query,
                        const std::function<Status(const std::string&, const std::string&)>& on) {
  while (!query.empty()) {
    const std::size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    const std::size_t eq = pair.find('=');
    const std::optional<std::string> key = PercentDecode(pair.substr(0, eq));
    const std::optional<std::string> value =
        PercentDecode(eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1));
    if (!key || !value) {
      return Status::Invalid("invalid_value", "malformed %-escape in the query string");
    }
    if (Status s = on(*key, *value); !s.ok()) return s;
  }
  return Status::Ok();
}

Result<bool> ParseBool(const std::string& key, const std::string& value) {
  if (value == "true" || value == "1") return true;
  if (value == "false" || value == "0") return false;
  return Status::Invalid("invalid_value", key + " must be true or false", key);
}

Result<bool> ParseGetQuery(std::string_view query) {
  bool show = false;
  Status s = ForEachParameter(query, [&](const std::string& key, const std::string& value) {
    if (key != "show_headers") {
      return Status::Invalid("unknown_field",
                             "unknown query parameter \"" + key.substr(0, 64) +
                                 "\"; known: show_headers",
                             key.substr(0, 64));
    }
    Result<bool> b = ParseBool(key, value);
    if (!b.ok()) return b.status();
    show = *b;
    return Status::Ok();
  });
  if (!s.ok()) return s;
  return show;
}

Result<ListQuery> ParseListQuery(std::string_view query) {
  ListQuery out;
  bool has_state = false;
  Status s = ForEachParameter(query, [&](const std::string& k, const std::string& v) -> Status {
    const std::string* key = &k;
    const std::string* value = &v;
    if (*key == "state") {
      std::optional<TimerState> state = ParseState(*value);
      if (!state) {
        return Status::Invalid("invalid_value",
                               "state must be pending, delivering, delivered, failed or "
                               "cancelled, not \"" + value->substr(0, 64) + "\"",
                               "state");
      }
      out.state = *state;
      has_state = true;
    } else if (*key == "limit") {
      std::size_t n = 0;
      auto [end, ec] = std::from_chars(value->data(), value->data() + value->size(), n);
      if (ec != std::errc() || end != value->data() + value->size() || n < 1 || n > 1000) {
        return Status::Invalid("invalid_value", "limit must be an integer 1..1000", "limit");
      }
      out.limit = n;
    } else if (*key == "after") {
      Result<ListCursor> cursor = DecodeCursor(*value);
      if (!cursor.ok()) return cursor.status();
      out.after = std::move(*cursor);
    } else if (*key == "show_headers") {
      Result<bool> b = ParseBool(*key, *value);
      if (!b.ok()) return b.status();
      out.show_headers = *b;
    } else if (*key == "prefix") {
      if (Status valid = ValidateIdPrefix(*value, "prefix"); !valid.ok()) return valid;
      out.filter.id_prefix = *value;
    } else if (*key == "host") {
      Result<std::string> host = NormalizeHost(*value, "host");
      if (!host.ok()) return host.status();
      out.filter.host = std::move(*host);
    } else {
      return Status::Invalid("unknown_field",
                             "unknown query parameter \"" + key->substr(0, 64) + "\"" +
                                 SuggestField(*key, {"state", "limit", "after", "show_headers",
                                                     "prefix", "host"}) +
                                 "; known: state, limit, after, show_headers, prefix, host",
                             key->substr(0, 64));
    }
    return Status::Ok();
  });
  if (!s.ok()) return s;
  if (!has_state) {
    // Each state is its own index, in its own order (pending by due time,
    // failed by when they failed, ...): one page across states would have
    // no order to continue from.
    return Status::Invalid("missing_field",
                           "give ?state=pending|delivering|delivered|failed|cancelled: timers "
                           "are listed one state at a time, each in its own order (due time for "
                           "pending and delivering, the time of the outcome for the others); "
                           "GET /v1/stats counts every state",
                           "state");
  }
  return out;
}

}  // namespace tickwheel::server
