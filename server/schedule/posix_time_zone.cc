// SPDX-License-Identifier: Apache-2.0
#include "schedule/posix_time_zone.h"

#include <date/date.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <iterator>
#include <limits>

#include "schedule/civil_days.h"

namespace tickwheel::server::recurrence_internal {
namespace {

bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

bool IsLeap(int y) { return date::year(y).is_leap(); }

// "CET", "<+1030>": at least 3 characters.
std::optional<std::string> ParseAbbreviation(std::string_view& s) {
  std::string out;
  if (!s.empty() && s[0] == '<') {
    std::size_t close = s.find('>');
    if (close == std::string_view::npos) return std::nullopt;
    out = std::string(s.substr(1, close - 1));
    for (char c : out) {
      if (!IsAlpha(c) && !IsAsciiDigit(c) && c != '+' && c != '-') return std::nullopt;
    }
    s.remove_prefix(close + 1);
  } else {
    std::size_t n = 0;
    while (n < s.size() && IsAlpha(s[n])) ++n;
    out = std::string(s.substr(0, n));
    s.remove_prefix(n);
  }
  if (out.size() < 3) return std::nullopt;
  return out;
}

// [+-]hh[:mm[:ss]] as seconds; hours at most `max_hours`.
std::optional<std::int32_t> ParseHms(std::string_view& s, int max_hours) {
  int sign = 1;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    sign = s[0] == '-' ? -1 : 1;
    s.remove_prefix(1);
  }
  int parts[3] = {0, 0, 0};
  for (int i = 0; i < 3; ++i) {
    if (i > 0) {
      if (s.empty() || s[0] != ':') break;
      s.remove_prefix(1);
    }
    std::size_t n = 0;
    int v = 0;
    while (n < s.size() && IsAsciiDigit(s[n]) && n < 3) v = v * 10 + (s[n++] - '0');
    if (n == 0) return std::nullopt;
    s.remove_prefix(n);
    parts[i] = v;
  }
  if (parts[0] > max_hours || parts[1] > 59 || parts[2] > 59) return std::nullopt;
  return static_cast<std::int32_t>(sign * (parts[0] * 3600 + parts[1] * 60 + parts[2]));
}

std::optional<int> ParseInt(std::string_view& s, int min, int max) {
  std::size_t n = 0;
  int v = 0;
  while (n < s.size() && IsAsciiDigit(s[n]) && n < 4) v = v * 10 + (s[n++] - '0');
  if (n == 0 || v < min || v > max) return std::nullopt;
  s.remove_prefix(n);
  return v;
}

}  // namespace

std::optional<PosixTimeZone::Rule> PosixTimeZone::ParseRule(std::string_view& s) {
  Rule rule;
  if (!s.empty() && s[0] == 'J') {
    s.remove_prefix(1);
    std::optional<int> day = ParseInt(s, 1, 365);
    if (!day) return std::nullopt;
    rule.kind = Rule::Kind::kJulianNoLeap;
    rule.day = *day;
  } else if (!s.empty() && s[0] == 'M') {
    s.remove_prefix(1);
    std::optional<int> month = ParseInt(s, 1, 12);
    if (!month || s.empty() || s[0] != '.') return std::nullopt;
    s.remove_prefix(1);
    std::optional<int> week = ParseInt(s, 1, 5);
    if (!week || s.empty() || s[0] != '.') return std::nullopt;
    s.remove_prefix(1);
    std::optional<int> weekday = ParseInt(s, 0, 6);
    if (!weekday) return std::nullopt;
    rule.kind = Rule::Kind::kMonthWeekDay;
    rule.month = *month;
    rule.week = *week;
    rule.weekday = *weekday;
  } else {
    std::optional<int> day = ParseInt(s, 0, 365);
    if (!day) return std::nullopt;
    rule.kind = Rule::Kind::kZeroBased;
    rule.day = *day;
  }
  if (!s.empty() && s[0] == '/') {
    s.remove_prefix(1);
    std::optional<std::int32_t> time = ParseHms(s, 167);
    if (!time) return std::nullopt;
    rule.time_s = *time;
  }
  return rule;
}

std::optional<PosixTimeZone> PosixTimeZone::Parse(std::string_view s) {
  PosixTimeZone tz;
  std::optional<std::string> std_abbr = ParseAbbreviation(s);
  if (!std_abbr) return std::nullopt;
  std::optional<std::int32_t> std_offset = ParseHms(s, 24);
  if (!std_offset) return std::nullopt;
  tz.std_abbr_ = *std_abbr;
  tz.std_offset_s_ = -*std_offset;
  if (s.empty()) return tz;

  std::optional<std::string> dst_abbr = ParseAbbreviation(s);
  if (!dst_abbr) return std::nullopt;
  tz.dst_abbr_ = *dst_abbr;
  tz.has_dst_ = true;
  tz.dst_offset_s_ = tz.std_offset_s_ + 3600;
  if (!s.empty() && s[0] != ',') {
    std::optional<std::int32_t> dst_offset = ParseHms(s, 24);
    if (!dst_offset) return std::nullopt;
    tz.dst_offset_s_ = -*dst_offset;
  }
  if (s.empty()) {
    // No rule: POSIX leaves it to the implementation; glibc and the tz
    // code take the US rules (tzdata's footers always give one).
    std::string_view us = "M3.2.0,M11.1.0";
    tz.start_ = *ParseRule(us);
    us.remove_prefix(1);
    tz.end_ = *ParseRule(us);
    return tz;
  }
  if (s[0] != ',') return std::nullopt;
  s.remove_prefix(1);
  std::optional<Rule> start = ParseRule(s);
  if (!start || s.empty() || s[0] != ',') return std::nullopt;
  s.remove_prefix(1);
  std::optional<Rule> end = ParseRule(s);
  if (!end || !s.empty()) return std::nullopt;
  tz.start_ = *start;
  tz.end_ = *end;
  return tz;
}

std::int64_t PosixTimeZone::TransitionUtc(const Rule& rule, int year, std::int32_t offset_s) {
  std::int64_t days;
  switch (rule.kind) {
    case Rule::Kind::kJulianNoLeap:
      days = DaysFromCivil(year, 1, 1) + rule.day - 1 + (IsLeap(year) && rule.day >= 60 ? 1 : 0);
      break;
    case Rule::Kind::kZeroBased:
      days = DaysFromCivil(year, 1, 1) + rule.day;
      break;
    case Rule::Kind::kMonthWeekDay:
    default: {
      std::int64_t first = DaysFromCivil(year, static_cast<unsigned>(rule.month), 1);
      // 1970-01-01 was a Thursday (4).
      int first_weekday = static_cast<int>(((first % 7) + 7 + 4) % 7);
      int day = 1 + (rule.weekday - first_weekday + 7) % 7 + 7 * (rule.week - 1);
      unsigned last = static_cast<unsigned>(
          (date::year(year) / date::month(static_cast<unsigned>(rule.month)) / date::last).day());
      while (day > static_cast<int>(last)) day -= 7;
      days = first + day - 1;
      break;
    }
  }
  return days * kSecondsPerDay + rule.time_s - offset_s;
}

PosixTimeZone::Period PosixTimeZone::At(std::int64_t utc_s) const {
  constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  if (!has_dst_) return {kMin, kMax, std_offset_s_, false};
  std::int64_t days = FloorDiv(utc_s, kSecondsPerDay);
  int year = static_cast<int>(date::year_month_day(date::sys_days(date::days(days))).year());
  struct Transition {
    std::int64_t at;
    bool to_dst;
  };
  std::array<Transition, 6> ts;
  for (int i = 0; i < 3; ++i) {
    int y = year - 1 + i;
    // DST starts at a local standard time and ends at a local DST time.
    ts[static_cast<std::size_t>(2 * i)] = {TransitionUtc(start_, y, std_offset_s_), true};
    ts[static_cast<std::size_t>(2 * i + 1)] = {TransitionUtc(end_, y, dst_offset_s_), false};
  }
  // At equal instants the end sorts first (DST all year: "0/0,J365/25").
  std::sort(ts.begin(), ts.end(), [](const Transition& a, const Transition& b) {
    return a.at != b.at ? a.at < b.at : (!a.to_dst && b.to_dst);
  });
  std::size_t i = 0;
  while (i < ts.size() && ts[i].at <= utc_s) ++i;
  Period p;
  if (i == 0) {
    p = {kMin, ts[0].at, 0, !ts[0].to_dst};
  } else {
    p = {ts[i - 1].at, i < ts.size() ? ts[i].at : kMax, 0, ts[i - 1].to_dst};
  }
  p.utc_offset_s = p.is_dst ? dst_offset_s_ : std_offset_s_;
  return p;
}

std::string ReadTzifFooter(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < 6 || bytes.compare(0, 4, "TZif") != 0 || bytes[4] < '2') return "";
  if (bytes.back() != '\n') return "";
  std::size_t start = bytes.rfind('\n', bytes.size() - 2);
  if (start == std::string::npos) return "";
  return bytes.substr(start + 1, bytes.size() - start - 2);
}

}  // namespace tickwheel::server::recurrence_internal
