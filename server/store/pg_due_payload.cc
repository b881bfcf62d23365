// SPDX-License-Identifier: Apache-2.0
// The NOTIFY payloads of the PostgreSQL store's due notices (DueNotice,
// DuePayload: store/postgres_timer_store.h).
#include "store/postgres_timer_store.h"

#include <charconv>

namespace tickwheel::server {

std::vector<std::string> EncodeDuePayloads(const std::string& node_id,
                                           const std::vector<DueNotice>& notices) {
  constexpr std::size_t kMaxPayload = 7900;
  std::vector<std::string> out;
  std::string current;
  for (const DueNotice& n : notices) {
    std::string line = std::to_string(n.shard) + " " +
                       (n.due_ms ? std::to_string(*n.due_ms) : std::string("-")) + " " + n.id +
                       " " + n.flow + "\n";
    if (!current.empty() && current.size() + line.size() > kMaxPayload) {
      out.push_back(std::move(current));
      current.clear();
    }
    if (current.empty()) current = node_id + "\n";
    current += line;
  }
  if (!current.empty()) out.push_back(std::move(current));
  return out;
}

std::optional<DuePayload> DecodeDuePayload(std::string_view payload) {
  DuePayload out;
  std::size_t nl = payload.find('\n');
  if (nl == std::string_view::npos) return std::nullopt;
  out.node_id = std::string(payload.substr(0, nl));
  payload.remove_prefix(nl + 1);
  while (!payload.empty()) {
    nl = payload.find('\n');
    if (nl == std::string_view::npos) return std::nullopt;
    const std::string_view line = payload.substr(0, nl);
    payload.remove_prefix(nl + 1);
    const std::size_t a = line.find(' ');
    const std::size_t b = a == std::string_view::npos ? a : line.find(' ', a + 1);
    if (b == std::string_view::npos) return std::nullopt;
    DueNotice n;
    if (std::from_chars(line.data(), line.data() + a, n.shard).ec != std::errc()) return std::nullopt;
    const std::string_view due = line.substr(a + 1, b - a - 1);
    if (due != "-") {
      std::int64_t ms = 0;
      if (std::from_chars(due.data(), due.data() + due.size(), ms).ec != std::errc()) {
        return std::nullopt;
      }
      n.due_ms = ms;
    }
    const std::string_view rest = line.substr(b + 1);
    const std::size_t c = rest.find(' ');
    n.id = std::string(rest.substr(0, c));
    if (c != std::string_view::npos) n.flow = std::string(rest.substr(c + 1));
    out.notices.push_back(std::move(n));
  }
  return out;
}

}  // namespace tickwheel::server
