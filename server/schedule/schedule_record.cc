// SPDX-License-Identifier: Apache-2.0
#include "schedule/schedule_record.h"

#include <array>

#include "common/binary_codec.h"

namespace tickwheel::server {
namespace {

constexpr std::uint8_t kFormat1 = 1;
constexpr std::uint8_t kFormat2 = 2;  // format 1 and, last, the flow named
constexpr std::uint8_t kFormat3 = 3;  // format 2 and, last, the trace context (never empty)
constexpr std::uint8_t kFormat4 = 4;  // split: the plan in ScheduleRow::plan
constexpr std::uint16_t kMaxHeaders = 256;
constexpr std::uint32_t kMaxCatchUps = 100'000;

template <typename E, std::size_t N>
std::optional<E> ByName(std::string_view name, const std::array<std::string_view, N>& names) {
  for (std::size_t i = 0; i < N; ++i) {
    if (names[i] == name) return static_cast<E>(i);
  }
  return std::nullopt;
}

constexpr std::array<std::string_view, 3> kStateNames = {"active", "paused", "ended"};
constexpr std::array<std::string_view, 3> kOverlapNames = {"allow", "skip", "buffer_one"};
constexpr std::array<std::string_view, 3> kCatchUpNames = {"none", "latest", "all"};
constexpr std::array<std::string_view, 4> kEndReasons = {"", "end_ms", "max_occurrences",
                                                         "no_more_times"};

template <typename E>
bool ReadEnum(BinaryReader& in, E& value, std::uint8_t count) {
  std::uint8_t v = 0;
  if (!in.Fixed(v) || v >= count) return false;
  value = static_cast<E>(v);
  return true;
}

bool ReadOptionalU32(BinaryReader& in, std::optional<std::uint32_t>& out) {
  std::optional<std::int64_t> v;
  if (!in.Optional(v)) return false;
  if (v && (*v < 0 || *v > UINT32_MAX)) return false;
  out = v ? std::optional<std::uint32_t>(static_cast<std::uint32_t>(*v)) : std::nullopt;
  return true;
}

}  // namespace

std::string_view StateName(ScheduleState s) { return kStateNames[static_cast<int>(s)]; }
std::optional<ScheduleState> ParseScheduleState(std::string_view name) {
  return ByName<ScheduleState>(name, kStateNames);
}
std::string_view PolicyName(OverlapPolicy p) { return kOverlapNames[static_cast<int>(p)]; }
std::optional<OverlapPolicy> ParseOverlapPolicy(std::string_view name) {
  return ByName<OverlapPolicy>(name, kOverlapNames);
}
std::string_view PolicyName(CatchUpPolicy p) { return kCatchUpNames[static_cast<int>(p)]; }
std::optional<CatchUpPolicy> ParseCatchUpPolicy(std::string_view name) {
  return ByName<CatchUpPolicy>(name, kCatchUpNames);
}
std::string_view EndReasonName(EndReason r) { return kEndReasons[static_cast<int>(r)]; }

namespace {

// A schedule's bytes in three parts. Formats 1-3 (whole) are the version,
// the fixed part, the plan, then the flow (2+) and the trace (3). Format 4
// (split) keeps the plan apart, so that a claim, which changes only the
// plan, rewrites only that: the version, the fixed part, the flow and the
// trace (two strings, maybe empty) in ScheduleRow::record, and the plan in
// ScheduleRow::plan.

void PutFixedPart(std::string& out, const ScheduleRecord& r) {
  PutFixed(out, static_cast<std::uint8_t>(r.state));
  // The recurrence.
  PutOptional(out, r.spec.every_ms);
  PutFixed(out, r.spec.anchor_ms);
  PutString(out, r.spec.cron);
  PutString(out, r.spec.time_zone);
  PutFixed(out, static_cast<std::uint8_t>(r.spec.dst_gap));
  PutFixed(out, static_cast<std::uint8_t>(r.spec.dst_overlap));
  // Its bounds and policies.
  PutOptional(out, r.start_ms);
  PutOptional(out, r.end_ms);
  PutOptional(out, r.max_occurrences ? std::optional<std::int64_t>(*r.max_occurrences)
                                     : std::nullopt);
  PutFixed(out, r.jitter_ms);
  PutFixed(out, static_cast<std::uint8_t>(r.overlap));
  PutFixed(out, static_cast<std::uint8_t>(r.catch_up));
  PutFixed(out, r.catch_up_window_ms);
  PutFixed(out, r.catch_up_max);
  // What each occurrence delivers.
  PutString(out, r.target);
  PutFixed(out, static_cast<std::uint16_t>(r.headers.size()));
  for (const auto& [name, value] : r.headers) {
    PutString(out, name);
    PutString(out, value);
  }
  PutString(out, r.payload);
  PutFixed(out, r.max_attempts);
  PutFixed(out, r.backoff_ms);
  out.append(reinterpret_cast<const char*>(r.digest.data()), r.digest.size());
  PutFixed(out, r.created_ms);
}

bool ReadFixedPart(BinaryReader& in, ScheduleRecord& r) {
  std::uint16_t headers = 0;
  bool ok = ReadEnum(in, r.state, 3) && in.Optional(r.spec.every_ms) &&
            in.Fixed(r.spec.anchor_ms) && in.String(r.spec.cron) &&
            in.String(r.spec.time_zone) && ReadEnum(in, r.spec.dst_gap, 2) &&
            ReadEnum(in, r.spec.dst_overlap, 2) && in.Optional(r.start_ms) &&
            in.Optional(r.end_ms) && ReadOptionalU32(in, r.max_occurrences) &&
            in.Fixed(r.jitter_ms) && ReadEnum(in, r.overlap, 3) && ReadEnum(in, r.catch_up, 3) &&
            in.Fixed(r.catch_up_window_ms) && in.Fixed(r.catch_up_max) && in.String(r.target) &&
            in.Fixed(headers) && headers <= kMaxHeaders;
  if (ok) {
    r.headers.resize(headers);
    for (auto& [name, value] : r.headers) ok = ok && in.String(name) && in.String(value);
  }
  ok = ok && in.String(r.payload) && in.Fixed(r.max_attempts) && in.Fixed(r.backoff_ms);
  for (std::uint8_t& b : r.digest) ok = ok && in.Fixed(b);
  return ok && in.Fixed(r.created_ms);
}

void PutPlan(std::string& out, const ScheduleRecord& r) {
  PutFixed(out, r.updated_ms);
  PutFixed(out, r.planned_until_ms);
  PutOptional(out, r.next_ms);
  PutFixed(out, static_cast<std::uint32_t>(r.catch_up_ms.size()));
  for (std::int64_t t : r.catch_up_ms) PutFixed(out, t);
  PutOptional(out, r.buffered_ms);
  PutOptional(out, r.last_fired_ms);
  PutFixed(out, r.occurrences);
  PutFixed(out, static_cast<std::uint8_t>(r.end_reason));
  PutOptional(out, r.paused_ms);
  PutOptional(out, r.resumed_ms);
  const ScheduleCounters& c = r.counts;
  for (std::uint64_t v : {c.planned, c.fired, c.skipped_overlap, c.skipped_catch_up,
                          c.skipped_dst, c.triggered, c.backfilled}) {
    PutFixed(out, v);
  }
}

bool ReadPlan(BinaryReader& in, ScheduleRecord& r) {
  std::uint32_t catch_ups = 0;
  bool ok = in.Fixed(r.updated_ms) && in.Fixed(r.planned_until_ms) && in.Optional(r.next_ms) &&
            in.Fixed(catch_ups) && catch_ups <= kMaxCatchUps;
  if (ok) {
    r.catch_up_ms.resize(catch_ups);
    for (std::int64_t& t : r.catch_up_ms) ok = ok && in.Fixed(t);
  }
  ok = ok && in.Optional(r.buffered_ms) && in.Optional(r.last_fired_ms) &&
       in.Fixed(r.occurrences) && ReadEnum(in, r.end_reason, 4) && in.Optional(r.paused_ms) &&
       in.Optional(r.resumed_ms);
  ScheduleCounters& c = r.counts;
  for (std::uint64_t* v : {&c.planned, &c.fired, &c.skipped_overlap, &c.skipped_catch_up,
                           &c.skipped_dst, &c.triggered, &c.backfilled}) {
    ok = ok && in.Fixed(*v);
  }
  return ok;
}

bool Traced(const ScheduleRecord& r) {
  return !r.trace.traceparent.empty() || !r.trace.tracestate.empty();
}

}  // namespace

ScheduleRow EncodeSchedule(const ScheduleRecord& r) {
  ScheduleRow row{r.id, static_cast<std::uint8_t>(r.state), {}, {}};
  row.record.reserve(128 + r.spec.cron.size() + r.target.size() + r.payload.size() +
                     r.flow.size());
  PutFixed(row.record, kFormat4);
  PutFixedPart(row.record, r);
  PutString(row.record, r.flow);
  PutString(row.record, r.trace.traceparent);
  PutString(row.record, r.trace.tracestate);
  row.plan.reserve(112 + 8 * r.catch_up_ms.size());
  PutPlan(row.plan, r);
  return row;
}

std::string EncodeWholeSchedule(const ScheduleRecord& r) {
  std::string out;
  out.reserve(240 + r.spec.cron.size() + r.target.size() + r.payload.size() + r.flow.size());
  const bool traced = Traced(r);
  PutFixed(out, traced ? kFormat3 : kFormat2);
  PutFixedPart(out, r);
  PutPlan(out, r);
  PutString(out, r.flow);
  if (traced) {
    PutString(out, r.trace.traceparent);
    PutString(out, r.trace.tracestate);
  }
  return out;
}

Result<ScheduleRecord> DecodeSchedule(const ScheduleRow& row) {
  BinaryReader in(row.record);
  ScheduleRecord r;
  r.id = row.id;
  std::uint8_t version = 0;
  if (!in.Fixed(version)) {
    return Status::Corrupt("the record of schedule \"" + r.id + "\" is empty");
  }
  if (version < kFormat1 || version > kFormat4) {
    return Status::Corrupt("the record of schedule \"" + r.id + "\" has format " +
                           std::to_string(version) +
                           ", which this server does not know (written by a newer tickwheel? "
                           "upgrade this one); it is left untouched");
  }
  bool ok = ReadFixedPart(in, r);
  if (version == kFormat4) {
    BinaryReader plan(row.plan);
    ok = ok && in.String(r.flow) && in.String(r.trace.traceparent) &&
         in.String(r.trace.tracestate) && ReadPlan(plan, r) && plan.done();
  } else {
    ok = ok && row.plan.empty() && ReadPlan(in, r);
    if (version >= kFormat2) ok = ok && in.String(r.flow);
    if (version >= kFormat3) {
      ok = ok && in.String(r.trace.traceparent) && in.String(r.trace.tracestate) &&
           Traced(r);
    }
  }
  if (!ok || !in.done() || static_cast<std::uint8_t>(r.state) != row.state) {
    return Status::Corrupt("the record of schedule \"" + r.id +
                           "\" is damaged (format " + std::to_string(version) +
                           "); it is left untouched");
  }
  return r;
}

Result<ScheduleRecord> DecodeWholeSchedule(const std::string& id, const std::string& bytes) {
  // The state is in the bytes (after the version); the row only repeats it.
  ScheduleRow row{id, bytes.size() > 1 ? static_cast<std::uint8_t>(bytes[1]) : std::uint8_t{0},
                  bytes, {}};
  if (!bytes.empty() && static_cast<std::uint8_t>(bytes[0]) == kFormat4) {
    return Status::Corrupt("the record of schedule \"" + id +
                           "\" has format 4, which is kept only in a store; an export line "
                           "carries formats 1 to 3");
  }
  return DecodeSchedule(row);
}

}  // namespace tickwheel::server
