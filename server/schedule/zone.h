// SPDX-License-Identifier: Apache-2.0
// Zone: an IANA time zone of the system's tz database (/usr/share/zoneinfo),
// through date/tz (Debian's libhowardhinnant-date-dev; docs/design.md says
// why date/tz). Beyond the last transition a zone file lists (2037 in
// Debian's files), date/tz with USE_OS_TZDB repeats the last offset; Zone
// continues with the file's POSIX TZ footer instead (posix_time_zone.h), as
// glibc, Python's zoneinfo and cctz do, so that Berlin still has summer
// time in 2038.
#ifndef TICKWHEEL_SERVER_SCHEDULE_ZONE_H_
#define TICKWHEEL_SERVER_SCHEDULE_ZONE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "schedule/posix_time_zone.h"

namespace date {
class time_zone;
}

namespace tickwheel::server::recurrence_internal {

// Where Debian's libdate-tz (USE_OS_TZDB) reads the zones, and Zone their
// footers.
inline constexpr const char* kZoneDirectory = "/usr/share/zoneinfo/";
// More than any UTC offset ever used (local mean times reached +-15:56),
// and so more than any gap or overlap: an instant and its local reading
// are less than this apart.
inline constexpr std::int64_t kMaxOffsetSpan = 26 * 3600;

// Thread safety: immutable; shared by every Recurrence in its zone.
// Cost: At and Resolve are a binary search in the zone's transitions
// (~100 ns), or a few date computations past 2037. No allocation but the
// abbreviation's (short strings: none).
//
//   Result<std::shared_ptr<const Zone>> berlin = Zone::Find("Europe/Berlin");
//   Zone::Resolved r = (*berlin)->Resolve(local_seconds);
class Zone {
 public:
  // The zone of that IANA name, loaded once per process and then shared.
  // kInvalidArgument (field "time_zone") for a name the database does not
  // have (with a hint when only the case differs) and for "localtime" (the
  // server's own zone: a schedule names its zone).
  static Result<std::shared_ptr<const Zone>> Find(std::string_view name);

  // A stretch of constant UTC offset: [begin, end) in Unix seconds.
  struct Period {
    std::int64_t begin;
    std::int64_t end;
    std::int32_t utc_offset_s;
    std::string abbreviation;
  };
  Period At(std::int64_t utc_s) const;

  // How a local time (seconds since 1970-01-01T00:00 on the zone's wall
  // clock) maps to instants.
  struct Resolved {
    enum class Kind {
      kUnique,   // first
      kGap,      // skipped by a forward change: first = the instant the gap ends,
                 // the first valid instant after it
      kOverlap,  // repeated by a backward change: first < second
    };
    Kind kind;
    std::int64_t first;
    std::int64_t second;
  };
  Resolved Resolve(std::int64_t local_s) const;

  const std::string& name() const { return name_; }

 private:
  Zone() = default;
  static Result<std::shared_ptr<const Zone>> Load(const std::string& name);

  std::string name_;
  const date::time_zone* tz_ = nullptr;
  // Instants >= footer_from_ follow footer_ (when it has DST).
  std::optional<PosixTimeZone> footer_;
  std::int64_t footer_from_ = 0;
};

}  // namespace tickwheel::server::recurrence_internal

#endif  // TICKWHEEL_SERVER_SCHEDULE_ZONE_H_
