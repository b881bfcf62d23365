// SPDX-License-Identifier: Apache-2.0
#include "time_flag.h"

#include <chrono>
#include <cstdio>

namespace tickwheel::app {

namespace {

// Reads exactly `n` digits at `at`.
bool Digits(std::string_view text, std::size_t at, std::size_t n, int& out) {
  if (at + n > text.size()) return false;
  out = 0;
  for (std::size_t i = at; i < at + n; ++i) {
    if (text[i] < '0' || text[i] > '9') return false;
    out = out * 10 + (text[i] - '0');
  }
  return true;
}

// "\"text\"" (appended, not inserted: GCC 12 warns about a string
// literal + std::string temporary).
std::string Quoted(std::string_view text) {
  std::string out = "\"";
  out.append(text);
  out += '"';
  return out;
}

bool AllDigits(std::string_view text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

}  // namespace

bool ParseTimeFlag(std::string_view text, std::int64_t& unix_ms, std::string& error) {
  const std::string example = "an RFC 3339 time such as 2026-11-25T20:00:00Z";
  if (AllDigits(text) || (text.size() > 1 && text[0] == '-' && AllDigits(text.substr(1)))) {
    error = Quoted(text) + " is a bare number: seconds or milliseconds? Give " + example +
            " (date -u -d @SECONDS +%FT%TZ prints one), or --in DURATION";
    return false;
  }
  int year, month, day, hour, minute, second;
  const bool shape = Digits(text, 0, 4, year) && text.size() > 4 && text[4] == '-' &&
                     Digits(text, 5, 2, month) && text.size() > 7 && text[7] == '-' &&
                     Digits(text, 8, 2, day) && text.size() > 10 &&
                     (text[10] == 'T' || text[10] == 't' || text[10] == ' ') &&
                     Digits(text, 11, 2, hour) && text.size() > 13 && text[13] == ':' &&
                     Digits(text, 14, 2, minute) && text.size() > 16 && text[16] == ':' &&
                     Digits(text, 17, 2, second);
  if (!shape) {
    error = Quoted(text) + " is not " + example;
    return false;
  }
  std::size_t at = 19;
  std::int64_t ms = 0;
  if (at < text.size() && text[at] == '.') {
    ++at;
    int scale = 100;
    const std::size_t first = at;
    while (at < text.size() && text[at] >= '0' && text[at] <= '9') {
      ms += (text[at] - '0') * scale;
      scale /= 10;
      ++at;
    }
    if (at == first) {
      error = Quoted(text) + ": a fraction needs digits after the dot";
      return false;
    }
  }
  int offset_minutes = 0;
  if (at < text.size() && (text[at] == 'Z' || text[at] == 'z')) {
    ++at;
  } else if (at < text.size() && (text[at] == '+' || text[at] == '-')) {
    int oh, om;
    if (!Digits(text, at + 1, 2, oh) || at + 3 >= text.size() || text[at + 3] != ':' ||
        !Digits(text, at + 4, 2, om) || oh > 23 || om > 59) {
      error = Quoted(text) + ": the offset must be Z or +HH:MM / -HH:MM";
      return false;
    }
    offset_minutes = (text[at] == '-' ? -1 : 1) * (oh * 60 + om);
    at += 6;
  } else {
    error = Quoted(text) +
            " has no time zone: end it with Z (UTC) or an offset such as +01:00";
    return false;
  }
  if (at != text.size()) {
    error = Quoted(text) + " has more after the time zone";
    return false;
  }
  using namespace std::chrono;
  const year_month_day date{std::chrono::year(year), std::chrono::month(static_cast<unsigned>(month)),
                            std::chrono::day(static_cast<unsigned>(day))};
  if (!date.ok() || hour > 23 || minute > 59 || second > 60) {
    error = Quoted(text) + " is not a valid date and time";
    return false;
  }
  const std::int64_t days = sys_days(date).time_since_epoch().count();
  const std::int64_t seconds =
      days * 86400 + hour * 3600 + minute * 60 + second - std::int64_t{offset_minutes} * 60;
  unix_ms = seconds * 1000 + ms;
  return true;
}

std::string FormatRfc3339(std::int64_t unix_ms) {
  using namespace std::chrono;
  const std::int64_t floor_ms = unix_ms >= 0 ? unix_ms : unix_ms - 999;
  const std::int64_t secs = floor_ms / 1000;
  const int millis = static_cast<int>(unix_ms - secs * 1000);
  const sys_days day = sys_days(days(secs >= 0 ? secs / 86400 : (secs - 86399) / 86400));
  const std::int64_t in_day = secs - day.time_since_epoch().count() * 86400;
  const year_month_day date(day);
  char out[48];
  std::snprintf(out, sizeof out, "%04d-%02u-%02uT%02d:%02d:%02d.%03dZ",
                static_cast<int>(date.year()), static_cast<unsigned>(date.month()),
                static_cast<unsigned>(date.day()), static_cast<int>(in_day / 3600),
                static_cast<int>(in_day / 60 % 60), static_cast<int>(in_day % 60), millis);
  return out;
}

}  // namespace tickwheel::app
