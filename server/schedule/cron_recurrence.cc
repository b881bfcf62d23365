// SPDX-License-Identifier: Apache-2.0
#include "schedule/cron_recurrence.h"

#include <algorithm>
#include <limits>

#include "schedule/civil_days.h"
#include "schedule/rfc3339.h"

namespace tickwheel::server::recurrence_internal {
namespace {

// Local times are those of the years 0001-9999; instants within a day of
// those ends may read inside them or not, depending on the zone. NextAfter
// starts no earlier than kMinInstant, and finds nothing after kMaxInstant.
constexpr std::int64_t kMinInstant = kMinLocalSeconds + kMaxOffsetSpan;
constexpr std::int64_t kMaxInstant = kMaxLocalSeconds + kMaxOffsetSpan;

}  // namespace

Result<std::shared_ptr<const CronRecurrence>> CronRecurrence::Compile(const RecurrenceSpec& spec) {
  Result<CronExpression> expression = ParseCronExpression(spec.cron);
  if (!expression.ok()) return expression.status();
  Result<std::shared_ptr<const Zone>> zone =
      Zone::Find(spec.time_zone.empty() ? std::string_view("UTC") : spec.time_zone);
  if (!zone.ok()) return zone.status();
  return std::shared_ptr<const CronRecurrence>(
      new CronRecurrence(*expression, *zone, spec.dst_gap, spec.dst_overlap));
}

std::optional<std::int64_t> CronRecurrence::FirstInstants(std::int64_t from_s,
                                                          const Zone::Period& period,
                                                          std::int64_t limit_local) const {
  // The first instant of a local time never decreases as the local time
  // grows (the end of a gap counts as its times' instant), so the first
  // local time from here on that is not skipped gives the answer. Local
  // times before `from`'s reading have first instants before `from_s`
  // (but for a gap that ends at from_s); so do those left of an overlap
  // `from_s` is in the second pass of.
  std::int64_t local = from_s + period.utc_offset_s;
  if (period.begin > kMinInstant && from_s - period.begin < kMaxOffsetSpan) {
    Zone::Period before = zone_->At(period.begin - 1);
    std::int64_t overlap = std::int64_t{before.utc_offset_s} - period.utc_offset_s;
    if (overlap > 0 && from_s < period.begin + overlap) {
      local = period.begin + before.utc_offset_s;  // the end of the overlap
    } else if (overlap < 0 && from_s == period.begin) {
      // A gap ends exactly at from_s: its times, all shifted to from_s,
      // are still to come.
      local = period.begin + before.utc_offset_s;  // the start of the gap
    }
  }
  while (true) {
    std::optional<std::int64_t> match = search_.NextMatch(local, limit_local);
    if (!match) return std::nullopt;
    // Most often the match reads in from_s's own period, far from its
    // ends: then no other offset can give it an instant.
    std::int64_t u = *match - period.utc_offset_s;
    if (u - period.begin >= kMaxOffsetSpan && period.end - u > kMaxOffsetSpan) return u;
    Zone::Resolved r = zone_->Resolve(*match);
    if (r.kind == Zone::Resolved::Kind::kGap && gap_ == DstGap::kSkip) {
      // Go on after the gap: the local time at which it ends.
      local = std::max(*match + 1, r.first + zone_->At(r.first).utc_offset_s);
      continue;
    }
    if (r.first >= from_s) return r.first;
    local = *match + 1;  // cannot happen by the argument above; stay total
  }
}

std::optional<std::int64_t> CronRecurrence::SecondInstant(std::int64_t from_s,
                                                          std::int64_t transition,
                                                          std::int32_t before_offset,
                                                          std::int32_t after_offset) const {
  if (before_offset <= after_offset) return std::nullopt;  // not an overlap
  // Second instants are local - after_offset; they must be >= from_s.
  std::int64_t begin = std::max(transition + after_offset, from_s + after_offset);
  std::optional<std::int64_t> match = search_.NextMatch(begin, transition + before_offset);
  if (!match) return std::nullopt;
  return *match - after_offset;
}

std::optional<std::int64_t> CronRecurrence::NextAfter(std::int64_t after_ms) const {
  if (!search_.can_match()) return std::nullopt;
  // Cron fires on whole seconds: the first one strictly after after_ms.
  std::int64_t from_s = std::max(FloorDiv(after_ms, 1000) + 1, kMinInstant);
  if (from_s > kMaxInstant) return std::nullopt;
  // Within one 400-year cycle a spec that matches at all matches again;
  // only DST "skip" can drop every match, and the bound ends that search.
  std::int64_t limit_local = from_s + kGregorianCycleSeconds + 2 * 86400;

  Zone::Period period = zone_->At(from_s);
  std::optional<std::int64_t> best = FirstInstants(from_s, period, limit_local);
  if (overlap_ == DstOverlap::kBoth) {
    // Second instants of overlap times come after first instants of later
    // local times only in the overlap around `from_s`: that of the
    // transition that began its period, or of the one that ends it (an
    // overlap lasts less than kMaxOffsetSpan).
    std::optional<std::int64_t> second;
    if (period.begin > kMinInstant && from_s - period.begin < kMaxOffsetSpan) {
      Zone::Period before = zone_->At(period.begin - 1);
      second = SecondInstant(from_s, period.begin, before.utc_offset_s, period.utc_offset_s);
    }
    if (!second && period.end < kMaxInstant && (!best || *best > period.end)) {
      Zone::Period after = zone_->At(period.end);
      second = SecondInstant(from_s, period.end, period.utc_offset_s, after.utc_offset_s);
    }
    if (second && (!best || *second < *best)) best = second;
  }
  if (!best) return std::nullopt;
  return *best * 1000;
}

LocalTime CronRecurrence::Describe(std::int64_t ms) const {
  Zone::Period period = zone_->At(FloorDiv(ms, 1000));
  return LocalTime{FormatRfc3339(ms, period.utc_offset_s), period.utc_offset_s,
                   period.abbreviation};
}

}  // namespace tickwheel::server::recurrence_internal
