// SPDX-License-Identifier: Apache-2.0
// The id of a schedule's occurrence: "<schedule id>@<nominal fire time, Unix
// ms>", e.g. "daily-report@1795430400000". Clients cannot create ids with
// '@' (api/timer_request.h), so an occurrence never collides with a
// client's timer, and an occurrence is unique by construction: its id is
// its dedup key. Everything keyed by the part before '@' (the shard, a
// schedule's lock) puts a schedule and its occurrences together.
#ifndef TICKWHEEL_SERVER_TIMER_OCCURRENCE_ID_H_
#define TICKWHEEL_SERVER_TIMER_OCCURRENCE_ID_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tickwheel::server {

// Occurrence ids sort by time within their schedule as long as the time
// has 13 digits: nominal times are kept in [kMinOccurrenceMs,
// kMaxOccurrenceMs] (2001-09-09 .. 2286-11-20).
inline constexpr std::int64_t kMinOccurrenceMs = 1'000'000'000'000;
inline constexpr std::int64_t kMaxOccurrenceMs = 9'999'999'999'999;

std::string OccurrenceId(std::string_view schedule_id, std::int64_t nominal_ms);

struct OccurrenceName {
  std::string_view schedule_id;
  std::int64_t nominal_ms = 0;
};
// The schedule and time of an occurrence id; nullopt for any other id
// (no '@', an empty schedule id, or a time that is not the canonical decimal
// OccurrenceId writes).
std::optional<OccurrenceName> ParseOccurrenceId(std::string_view id);

// What sharding and a schedule's lock key on: the id up to its first '@'
// (the whole id when there is none).
inline std::string_view ShardKeyOf(std::string_view id) {
  return id.substr(0, id.find('@'));
}

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_TIMER_OCCURRENCE_ID_H_
