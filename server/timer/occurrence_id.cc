// SPDX-License-Identifier: Apache-2.0
#include "timer/occurrence_id.h"

#include <charconv>

namespace tickwheel::server {

std::string OccurrenceId(std::string_view schedule_id, std::int64_t nominal_ms) {
  std::string id;
  id.reserve(schedule_id.size() + 21);
  id.append(schedule_id);
  id.push_back('@');
  id.append(std::to_string(nominal_ms));
  return id;
}

std::optional<OccurrenceName> ParseOccurrenceId(std::string_view id) {
  const std::size_t at = id.find('@');
  if (at == std::string_view::npos || at == 0) return std::nullopt;
  const std::string_view digits = id.substr(at + 1);
  // Only the canonical form OccurrenceId writes: digits, no sign, no
  // leading zero.
  if (digits.empty() || digits.size() > 19 || digits[0] < '0' || digits[0] > '9' ||
      (digits[0] == '0' && digits.size() > 1)) {
    return std::nullopt;
  }
  OccurrenceName out{id.substr(0, at), 0};
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), out.nominal_ms);
  if (ec != std::errc() || end != digits.data() + digits.size() || out.nominal_ms < 0) {
    return std::nullopt;
  }
  return out;
}

}  // namespace tickwheel::server
