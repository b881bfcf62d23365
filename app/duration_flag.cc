#include "duration_flag.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace tickwheel::app {

std::optional<Duration> ParseDuration(std::string_view text) {
  double value = 0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  auto [number_end, error] = std::from_chars(begin, end, value);
  if (error != std::errc() || number_end == begin || *begin == '-' ||
      !std::isfinite(value)) {
    return std::nullopt;
  }
  const std::string_view unit(number_end, end - number_end);
  double ns_per_unit;
  if (unit == "ns") {
    ns_per_unit = 1;
  } else if (unit == "us") {
    ns_per_unit = 1e3;
  } else if (unit == "ms") {
    ns_per_unit = 1e6;
  } else if (unit == "s") {
    ns_per_unit = 1e9;
  } else if (unit == "m") {
    ns_per_unit = 60e9;
  } else if (unit == "h") {
    ns_per_unit = 3600e9;
  } else if (unit == "d") {
    ns_per_unit = 86400e9;
  } else {
    return std::nullopt;
  }
  const double ns = value * ns_per_unit;
  if (ns >= 9.2e18) return std::nullopt;  // beyond what int64 ns can hold
  return Duration(static_cast<Duration::rep>(std::llround(ns)));
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
