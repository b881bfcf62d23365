// SPDX-License-Identifier: Apache-2.0
// CronRecurrence: a cron expression in a time zone with its DST policies;
// the cron half of Recurrence (recurrence.h), which documents the contract.
#ifndef TICKWHEEL_SERVER_SCHEDULE_CRON_RECURRENCE_H_
#define TICKWHEEL_SERVER_SCHEDULE_CRON_RECURRENCE_H_

#include <cstdint>
#include <memory>
#include <optional>

#include "common/status.h"
#include "schedule/cron_search.h"
#include "schedule/recurrence.h"
#include "schedule/zone.h"

namespace tickwheel::server::recurrence_internal {

// Thread safety: immutable. Cost of NextAfter: one or two CronSearch
// jumps and two to four zone look-ups, about a microsecond; at most one
// more jump per DST gap it skips ("skip"), and none for a spec that can
// never match (refused at once).
//
// How instants follow from local times (zone.h's Resolve):
//   unique local time      -> its instant;
//   in a gap (spring)      -> "shift": the instant the gap ends (every gap
//                             time maps to it, so it fires once); "skip": none;
//   in an overlap (autumn) -> "first": the earlier instant; "both": each.
// NextAfter is the smallest such instant after the given one.
class CronRecurrence {
 public:
  static Result<std::shared_ptr<const CronRecurrence>> Compile(const RecurrenceSpec& spec);

  std::optional<std::int64_t> NextAfter(std::int64_t after_ms) const;
  LocalTime Describe(std::int64_t ms) const;

  const CronSearch& search() const { return search_; }
  const Zone& zone() const { return *zone_; }

 private:
  CronRecurrence(const CronExpression& expression, std::shared_ptr<const Zone> zone, DstGap gap,
                 DstOverlap overlap)
      : search_(expression), zone_(std::move(zone)), gap_(gap), overlap_(overlap) {}

  // The first instant >= `from_s` given by the first instant of a local
  // time (or the end of the gap it is in), DST gap policy applied.
  // `period` is the zone's period at from_s.
  std::optional<std::int64_t> FirstInstants(std::int64_t from_s, const Zone::Period& period,
                                            std::int64_t limit_local) const;
  // The earliest second instant of an overlap time, >= `from_s`, of the
  // overlap of the backward transition at `transition`: local times
  // [transition + after_offset, transition + before_offset).
  std::optional<std::int64_t> SecondInstant(std::int64_t from_s, std::int64_t transition,
                                            std::int32_t before_offset,
                                            std::int32_t after_offset) const;

  CronSearch search_;
  std::shared_ptr<const Zone> zone_;
  DstGap gap_;
  DstOverlap overlap_;
};

}  // namespace tickwheel::server::recurrence_internal

#endif  // TICKWHEEL_SERVER_SCHEDULE_CRON_RECURRENCE_H_
