// SPDX-License-Identifier: Apache-2.0
#include "duration_flag.h"

#include <charconv>
#include <cctype>
#include <cmath>
#include <cstdio>

namespace tickwheel::app {

namespace {

// Nanoseconds per `unit`, or 0 for no such unit.
double NsPerUnit(std::string_view unit) {
  if (unit == "ns") return 1;
  if (unit == "us") return 1e3;
  if (unit == "ms") return 1e6;
  if (unit == "s") return 1e9;
  if (unit == "m") return 60e9;
  if (unit == "h") return 3600e9;
  if (unit == "d") return 86400e9;
  return 0;
}

}  // namespace

std::optional<Duration> ParseDuration(std::string_view text) {
  if (text == "0") return Duration(0);
  if (text.empty()) return std::nullopt;
  double total_ns = 0;
  const char* at = text.data();
  const char* const end = text.data() + text.size();
  while (at != end) {
    // from_chars would take a sign or an exponent: only digits and a dot.
    if (!std::isdigit(static_cast<unsigned char>(*at)) && *at != '.') return std::nullopt;
    double value = 0;
    auto [number_end, error] = std::from_chars(at, end, value, std::chars_format::fixed);
    if (error != std::errc() || number_end == at || !std::isfinite(value)) return std::nullopt;
    const char* unit_end = number_end;
    while (unit_end != end && std::isalpha(static_cast<unsigned char>(*unit_end))) ++unit_end;
    const double ns_per_unit = NsPerUnit(std::string_view(number_end, unit_end - number_end));
    if (ns_per_unit == 0) return std::nullopt;
    total_ns += value * ns_per_unit;
    at = unit_end;
  }
  if (total_ns >= 9.2e18) return std::nullopt;  // beyond what int64 ns can hold
  return Duration(static_cast<Duration::rep>(std::llround(total_ns)));
}

std::string FormatDuration(Duration d) {
  const double ns = static_cast<double>(d.count());
  char buf[32];
  if (ns >= 1e9 || ns == 0) {
    std::snprintf(buf, sizeof buf, "%gs", ns / 1e9);
  } else if (ns >= 1e6) {
    std::snprintf(buf, sizeof buf, "%gms", ns / 1e6);
  } else if (ns >= 1e3) {
    std::snprintf(buf, sizeof buf, "%gus", ns / 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%gns", ns);
  }
  return buf;
}

}  // namespace tickwheel::app
