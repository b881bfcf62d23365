// SPDX-License-Identifier: Apache-2.0
#include "schedule/planner.h"

#include <algorithm>
#include <limits>

#include "timer/occurrence_id.h"

namespace tickwheel::server {
namespace {

// Consecutive times whose occurrences exist already (made by triggers or
// backfills) that one planning step walks past before it gives up until
// the next step.
constexpr int kMaxExistingInARow = 10'000;
constexpr std::uint64_t kMaxDstSkipsInAGap = 100;

std::int64_t Room(const ScheduleRecord& s) {
  if (!s.max_occurrences) return std::numeric_limits<std::int64_t>::max();
  return static_cast<std::int64_t>(*s.max_occurrences) - s.occurrences -
         static_cast<std::int64_t>(s.catch_up_ms.size()) - (s.buffered_ms ? 1 : 0) -
         (s.next_ms ? 1 : 0);
}

bool EraseTime(std::vector<std::int64_t>& times, std::int64_t t) {
  auto it = std::find(times.begin(), times.end(), t);
  if (it == times.end()) return false;
  times.erase(it);
  return true;
}

void CountSkipped(ScheduleRecord& s, PlanStep& step, std::uint64_t n) {
  s.counts.skipped_catch_up += n;
  step.skipped_catch_up += n;
}

// Makes `t` (missed, to fire now) a catch-up occurrence, unless it exists.
void AddCatchUp(ScheduleRecord& s, std::int64_t t, std::int64_t due, const OccurrenceExists& exists,
                PlanStep& step) {
  if (exists(t)) return;
  s.catch_up_ms.push_back(t);
  s.counts.planned += 1;
  step.planned += 1;
  step.create.push_back({t, due});
}

// The catch-up decision at the claim of the planned occurrence `x`.
Fate CatchUp(ScheduleRecord& s, const Timeline& t, std::int64_t x, std::int64_t now,
             std::int64_t owned_since, const OccurrenceExists& exists, PlanStep& step) {
  const std::int64_t window = s.catch_up_window_ms;
  // Times due before `missed_before` were missed.
  const std::int64_t began = std::max(owned_since, s.resumed_ms.value_or(owned_since));
  const std::int64_t missed_before = std::max(began - kMissedGraceMs, now - window);
  if (x + JitterMs(s.id, x, s.jitter_ms) >= missed_before) return Fate::kFire;
  // The run of missed times: x up to `last`, the last one before
  // missed_before (and not after now).
  const std::int64_t last = t.LastAtOrBefore(x, std::min(missed_before - 1, now));
  s.planned_until_ms = std::max(s.planned_until_ms, last);
  auto count = [&](std::int64_t a, std::int64_t b) {  // times in [a, b]
    return a == b ? 1 : 2 + t.CountBetween(a, b, kMaxSkipCount);
  };
  std::int64_t room = Room(s);
  if (s.catch_up != CatchUpPolicy::kAll) {
    // none: all of them are skipped; latest: the last fires, if within the
    // window.
    const bool fire_last = s.catch_up == CatchUpPolicy::kLatest && now - last <= window &&
                           (room > 0 || last == x);
    if (!fire_last) {
      CountSkipped(s, step, count(x, last));
      return Fate::kSkipCatchUp;
    }
    if (last == x) return Fate::kFire;
    CountSkipped(s, step, count(x, last) - 1);
    if (exists(last)) return Fate::kSkipCatchUp;  // an occurrence already
    AddCatchUp(s, last, now, exists, step);
    return Fate::kSkipCatchUp;
  }
  // all: each within the window, oldest first, at most catch_up_max.
  Fate fate = Fate::kSkipCatchUp;
  std::optional<std::int64_t> at = x;
  if (now - x > window) {
    const std::optional<std::int64_t> first = t.After(std::max(x, now - window - 1)).ms;
    at = first && *first <= last ? first : std::nullopt;
    CountSkipped(s, step, at ? count(x, *at) - 1 : count(x, last));
  }
  std::uint32_t taken = 0;
  for (; at && *at <= last && taken < s.catch_up_max; at = t.After(*at).ms) {
    if (*at != x && exists(*at)) continue;  // an occurrence already (a backfill): decided
    if (room <= 0) {
      CountSkipped(s, step, 1);
      continue;
    }
    --room;
    if (*at == x) {
      fate = Fate::kFire;
    } else {
      AddCatchUp(s, *at, now + taken, exists, step);
    }
    ++taken;
  }
  if (at && *at <= last) CountSkipped(s, step, count(*at, last));  // over the cap
  return fate;
}

void Release(ScheduleRecord& s, std::int64_t now, const OccurrenceExists& exists,
             PlanStep& step) {
  const std::int64_t b = *s.buffered_ms;
  s.buffered_ms.reset();
  if (exists(b)) return;
  s.catch_up_ms.push_back(b);
  step.create.push_back({b, now});
}

}  // namespace

Result<Timeline> Timeline::Of(const ScheduleRecord& record) {
  Result<Recurrence> r = Recurrence::Compile(record.spec);
  if (!r.ok()) return r.status();
  std::optional<Recurrence> shifted;
  if (!record.spec.cron.empty() && record.spec.dst_gap == DstGap::kSkip) {
    RecurrenceSpec spec = record.spec;
    spec.dst_gap = DstGap::kShift;
    Result<Recurrence> s = Recurrence::Compile(spec);
    if (!s.ok()) return s.status();
    shifted = std::move(*s);
  }
  const std::int64_t start = std::max(record.start_ms.value_or(kMinOccurrenceMs), kMinOccurrenceMs);
  const std::int64_t end = std::min(record.end_ms.value_or(kMaxOccurrenceMs + 1),
                                    kMaxOccurrenceMs + 1);
  Timeline t(std::move(*r), std::move(shifted), start, end);
  t.end_is_end_ms_ = record.end_ms && *record.end_ms <= kMaxOccurrenceMs;
  return t;
}

Timeline::Next Timeline::After(std::int64_t t) const {
  const std::optional<std::int64_t> n = recurrence_.NextAfter(std::max(t, start_ - 1));
  if (!n) return {std::nullopt, EndReason::kNoMoreTimes};
  if (*n >= end_) {
    return {std::nullopt, end_is_end_ms_ ? EndReason::kEndTime : EndReason::kNoMoreTimes};
  }
  return {n, EndReason::kNone};
}

std::int64_t Timeline::LastAtOrBefore(std::int64_t known, std::int64_t t) const {
  // After() never decreases as its argument grows: the largest `lo` with
  // After(lo) <= t gives the last time <= t.
  std::optional<std::int64_t> next = After(known).ms;
  if (!next || *next > t) return known;
  std::int64_t lo = known;  // After(lo) <= t
  std::int64_t hi = t;      // After(hi) > t
  while (hi - lo > 1) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    const std::optional<std::int64_t> n = After(mid).ms;
    if (n && *n <= t) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return *After(lo).ms;
}

std::uint64_t Timeline::CountBetween(std::int64_t a, std::int64_t b, std::uint64_t cap) const {
  if (b <= a) return 0;
  const RecurrenceSpec& spec = recurrence_.spec();
  if (spec.every_ms) {
    // Times r + k * every (r: the anchor modulo every, the same times): count
    // the k with a < time < b. a and b are occurrence times, far from the
    // int64 ends.
    const std::int64_t p = *spec.every_ms;
    std::int64_t r = spec.anchor_ms % p;
    if (r < 0) r += p;
    auto floor_div = [](std::int64_t n, std::int64_t d) {
      return n >= 0 ? n / d : -((-n + d - 1) / d);
    };
    const std::int64_t first = floor_div(a - r, p) + 1;  // smallest k with time > a
    const std::int64_t last = floor_div(b - 1 - r, p);   // largest k with time < b
    return last >= first ? static_cast<std::uint64_t>(last - first + 1) : 0;
  }
  std::uint64_t n = 0;
  for (std::optional<std::int64_t> at = After(a).ms; at && *at < b && n < cap; at = After(*at).ms) {
    ++n;
  }
  return n;
}

std::uint64_t Timeline::DstSkipsBetween(std::int64_t a, std::int64_t b) const {
  if (!shifted_) return 0;
  // b is the first time of the recurrence after a: every time the shifted
  // recurrence has in between is a gap time the skip policy dropped.
  std::uint64_t n = 0;
  for (std::optional<std::int64_t> at = shifted_->NextAfter(a);
       at && *at < b && n < kMaxDstSkipsInAGap; at = shifted_->NextAfter(*at)) {
    ++n;
  }
  return n;
}

std::int64_t JitterMs(std::string_view schedule_id, std::int64_t nominal_ms,
                      std::int64_t jitter_ms) {
  if (jitter_ms <= 0) return 0;
  std::uint64_t h = 14695981039346656037ull;  // FNV-1a of the id
  for (unsigned char c : schedule_id) {
    h ^= c;
    h *= 1099511628211ull;
  }
  std::uint64_t z = h ^ static_cast<std::uint64_t>(nominal_ms);  // splitmix64
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return static_cast<std::int64_t>(z % static_cast<std::uint64_t>(jitter_ms));
}

void Maintain(ScheduleRecord& s, const Timeline& t, std::int64_t now,
              const OccurrenceExists& exists, PlanStep& step) {
  if (s.state != ScheduleState::kActive) return;
  EndReason why = EndReason::kNone;
  bool stalled = false;
  if (!s.next_ms && Room(s) > 0) {
    stalled = true;
    for (int i = 0; i < kMaxExistingInARow; ++i) {
      const Timeline::Next n = t.After(s.planned_until_ms);
      if (!n.ms) {
        why = n.why;
        stalled = false;
        break;
      }
      const std::uint64_t dst = t.DstSkipsBetween(s.planned_until_ms, *n.ms);
      s.counts.skipped_dst += dst;
      step.skipped_dst += dst;
      s.planned_until_ms = *n.ms;
      if (exists(*n.ms)) continue;  // a trigger or a backfill made it: decided
      s.next_ms = n.ms;
      s.counts.planned += 1;
      step.planned += 1;
      // Due at its time; if that has passed, now, but after the catch-ups
      // of this step (times fire in order).
      const std::int64_t after_catch_ups = step.create.empty() ? now : step.create.back().due_ms + 1;
      step.create.push_back({*n.ms, std::max({*n.ms + JitterMs(s.id, *n.ms, s.jitter_ms), now,
                                              after_catch_ups})});
      stalled = false;
      break;
    }
  }
  if (!s.next_ms && !stalled && s.catch_up_ms.empty() && !s.buffered_ms) {
    s.state = ScheduleState::kEnded;
    s.end_reason = why != EndReason::kNone ? why : EndReason::kMaxOccurrences;
  }
}

void StartPlanning(ScheduleRecord& s, const Timeline& t, std::int64_t now,
                   const OccurrenceExists& exists, PlanStep& step) {
  s.planned_until_ms = s.start_ms ? std::max(now, *s.start_ms - 1) : now;
  Maintain(s, t, now, exists, step);
}

Fate OnClaim(ScheduleRecord& s, const Timeline& t, std::int64_t nominal_ms, std::int64_t now,
             std::int64_t owned_since, bool previous_running, const OccurrenceExists& exists,
             PlanStep& step) {
  enum class Kind { kPlanned, kCatchUp, kManual };
  Kind kind = Kind::kManual;
  Fate fate = Fate::kFire;
  if (s.next_ms == nominal_ms) {
    kind = Kind::kPlanned;
    s.next_ms.reset();
    fate = CatchUp(s, t, nominal_ms, now, owned_since, exists, step);
  } else if (EraseTime(s.catch_up_ms, nominal_ms)) {
    kind = Kind::kCatchUp;
  }
  if (fate == Fate::kFire && kind != Kind::kManual && NeedsPrevious(s) &&
      *s.last_fired_ms != nominal_ms && previous_running) {
    if (s.overlap == OverlapPolicy::kBufferOne && !s.buffered_ms) {
      s.buffered_ms = nominal_ms;
      fate = Fate::kBuffer;
    } else {
      fate = Fate::kSkipOverlap;
      s.counts.skipped_overlap += 1;
      step.skipped_overlap += 1;
    }
  }
  if (fate == Fate::kFire) {
    s.last_fired_ms = nominal_ms;
    s.counts.fired += 1;
    step.fired += 1;
    if (kind != Kind::kManual) s.occurrences += 1;
  }
  Maintain(s, t, now, exists, step);
  return fate;
}

void OnFinished(ScheduleRecord& s, const Timeline& t, std::int64_t nominal_ms, bool fired,
                std::int64_t now, const OccurrenceExists& exists, PlanStep& step) {
  if (fired) {
    if (s.buffered_ms && s.last_fired_ms == nominal_ms && s.state == ScheduleState::kActive) {
      Release(s, now, exists, step);
    }
  } else if (s.next_ms == nominal_ms) {
    s.next_ms.reset();
  } else {
    EraseTime(s.catch_up_ms, nominal_ms);
  }
  Maintain(s, t, now, exists, step);
}

std::vector<std::int64_t> Pause(ScheduleRecord& s, std::int64_t now) {
  std::vector<std::int64_t> erase = PlannedTimes(s);
  if (s.next_ms) {
    s.planned_until_ms = *s.next_ms - 1;  // the planned time is decided again at Resume
    s.next_ms.reset();
  }
  s.state = ScheduleState::kPaused;
  s.paused_ms = now;
  return erase;
}

void Resume(ScheduleRecord& s, const Timeline& t, std::int64_t now, bool previous_running,
            const OccurrenceExists& exists, PlanStep& step) {
  s.state = ScheduleState::kActive;
  s.paused_ms.reset();
  s.resumed_ms = now;  // what fell in the pause was missed
  std::int64_t due = now;
  for (std::int64_t c : s.catch_up_ms) {
    if (!exists(c)) step.create.push_back({c, due++});
  }
  if (s.buffered_ms && !previous_running) Release(s, due, exists, step);
  Maintain(s, t, now, exists, step);
}

bool FinishMatters(const ScheduleRecord& s, std::int64_t nominal_ms, bool fired) {
  if (fired) return s.buffered_ms && s.last_fired_ms == nominal_ms;
  return s.next_ms == nominal_ms ||
         std::find(s.catch_up_ms.begin(), s.catch_up_ms.end(), nominal_ms) != s.catch_up_ms.end();
}

std::vector<std::int64_t> UpcomingTimes(const ScheduleRecord& s, const Timeline& t,
                                        std::int64_t now, std::size_t n) {
  std::vector<std::int64_t> out;
  if (s.state == ScheduleState::kEnded) return out;
  std::int64_t room = Room(s);
  std::int64_t from = s.state == ScheduleState::kPaused ? std::max(s.planned_until_ms, now)
                                                        : s.planned_until_ms;
  if (s.next_ms) {
    out.push_back(*s.next_ms);
    from = *s.next_ms;
    if (s.max_occurrences) ++room;  // Room() counted it
  }
  while (out.size() < n && static_cast<std::int64_t>(out.size()) < room) {
    const std::optional<std::int64_t> at = t.After(from).ms;
    if (!at) break;
    out.push_back(*at);
    from = *at;
  }
  return out;
}

std::vector<std::int64_t> PlannedTimes(const ScheduleRecord& s) {
  std::vector<std::int64_t> out = s.catch_up_ms;
  if (s.next_ms) out.push_back(*s.next_ms);
  return out;
}

void Replan(ScheduleRecord& s, const Timeline& t, std::int64_t now,
            const OccurrenceExists& exists, PlanStep& step) {
  s.next_ms.reset();
  s.catch_up_ms.clear();
  s.buffered_ms.reset();
  if (s.state == ScheduleState::kEnded) {
    s.state = ScheduleState::kActive;
    s.end_reason = EndReason::kNone;
  }
  s.planned_until_ms = s.start_ms ? std::max(now, *s.start_ms - 1) : now;
  Maintain(s, t, now, exists, step);
}

}  // namespace tickwheel::server
