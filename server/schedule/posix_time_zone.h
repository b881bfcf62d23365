// SPDX-License-Identifier: Apache-2.0
// A POSIX TZ rule, as the footer of a TZif file carries it (RFC 8536,
// section 3.3): "CET-1CEST,M3.5.0,M10.5.0/3". It says how a zone keeps
// time after the last transition its file lists. Debian's zone files list
// transitions up to 2037, and date/tz with USE_OS_TZDB reads only those (a
// Berlin summer in 2038 would be CET): zone.h uses this rule from there on.
#ifndef TICKWHEEL_SERVER_SCHEDULE_POSIX_TIME_ZONE_H_
#define TICKWHEEL_SERVER_SCHEDULE_POSIX_TIME_ZONE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tickwheel::server::recurrence_internal {

// Thread safety: a value type. Offsets are seconds east of UTC (the TZ
// string's own sign is the other way round: "CET-1" is UTC+1).
class PosixTimeZone {
 public:
  // nullopt if `text` is not a POSIX TZ string (with the RFC 8536
  // extensions: hours up to 167 and negative in transition times).
  static std::optional<PosixTimeZone> Parse(std::string_view text);

  // One stretch of constant offset: [begin, end) in Unix seconds; begin is
  // the previous transition (or INT64_MIN), end the next (or INT64_MAX).
  struct Period {
    std::int64_t begin;
    std::int64_t end;
    std::int32_t utc_offset_s;
    bool is_dst;
  };
  // The period that contains `utc_s`. REQUIRES: utc_s within the years
  // -32000..32000 (the calendar arithmetic's range).
  Period At(std::int64_t utc_s) const;

  bool has_dst() const { return has_dst_; }
  const std::string& abbreviation(bool dst) const { return dst ? dst_abbr_ : std_abbr_; }

 private:
  // A transition date: Jn (1-365, February 29 never counted), n (0-365,
  // counting it), or Mm.w.d (weekday d of week w of month m; w = 5: last).
  struct Rule {
    enum class Kind { kJulianNoLeap, kZeroBased, kMonthWeekDay } kind = Kind::kMonthWeekDay;
    int day = 0;  // Jn, n
    int month = 0, week = 0, weekday = 0;
    std::int32_t time_s = 7200;  // local time of day, default 02:00
  };
  // Unix seconds of the rule's moment in `year`, the local clock reading
  // `offset_s` before it.
  static std::int64_t TransitionUtc(const Rule& rule, int year, std::int32_t offset_s);
  static std::optional<Rule> ParseRule(std::string_view& s);

  std::string std_abbr_;
  std::string dst_abbr_;
  std::int32_t std_offset_s_ = 0;
  std::int32_t dst_offset_s_ = 0;
  bool has_dst_ = false;
  Rule start_;  // standard -> DST
  Rule end_;    // DST -> standard
};

// The POSIX TZ string at the end of the version 2+ TZif file at `path`
// ("" if there is none or the file cannot be read).
std::string ReadTzifFooter(const std::string& path);

}  // namespace tickwheel::server::recurrence_internal

#endif  // TICKWHEEL_SERVER_SCHEDULE_POSIX_TIME_ZONE_H_
