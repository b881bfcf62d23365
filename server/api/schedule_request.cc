// SPDX-License-Identifier: Apache-2.0
#include "api/schedule_request.h"

#include <boost/json.hpp>
#include <charconv>

#include "api/json_body.h"
#include "api/list_query.h"
#include "common/sha256.h"
#include "timer/occurrence_id.h"

namespace tickwheel::server {

namespace json = boost::json;

namespace {

constexpr std::size_t kMaxCronLength = 256;
constexpr std::size_t kMaxZoneLength = 64;
constexpr std::int64_t kMaxEveryMs = 10LL * 365 * 24 * 3600 * 1000;
constexpr std::int64_t kMaxOccurrencesLimit = 1'000'000'000;

using request_error::Bad;

// A string field; nullopt if absent (or null, when `nullable`).
Result<std::optional<std::string>> String(const json::object& obj, std::string_view key,
                                          std::size_t max_length) {
  const json::value* v = obj.if_contains(key);
  if (v == nullptr) return std::optional<std::string>();
  if (!v->is_string()) {
    return Bad("invalid_type", std::string(key),
               std::string(key) + " must be a string, not " + KindName(*v));
  }
  if (v->as_string().size() > max_length) {
    return Bad("invalid_value", std::string(key),
               std::string(key) + " is longer than " + std::to_string(max_length) + " characters");
  }
  return std::optional<std::string>(std::string(v->as_string()));
}

// An integer field in [lo, hi]; nullopt if absent.
Result<std::optional<std::int64_t>> Bounded(const json::object& obj, std::string_view key,
                                            std::int64_t lo, std::int64_t hi,
                                            std::string_view unit_hint = "") {
  Result<std::optional<std::int64_t>> v = Integer(obj, key, "");
  if (!v.ok() || !*v) return v;
  if (**v < lo || **v > hi) {
    return Bad("out_of_range", std::string(key),
               std::string(key) + " must be " + std::to_string(lo) + ".." + std::to_string(hi) +
                   ", not " + std::to_string(**v) + std::string(unit_hint));
  }
  return v;
}

// A field that may be null to remove it (PATCH): outer nullopt if absent.
template <typename T>
Result<std::optional<std::optional<T>>> Removable(const json::object& obj, std::string_view key,
                                                  std::int64_t lo, std::int64_t hi) {
  const json::value* v = obj.if_contains(key);
  if (v == nullptr) return std::optional<std::optional<T>>();
  if (v->is_null()) return std::optional<std::optional<T>>(std::optional<T>());
  Result<std::optional<std::int64_t>> n = Bounded(obj, key, lo, hi);
  if (!n.ok()) return n.status();
  return std::optional<std::optional<T>>(std::optional<T>(static_cast<T>(**n)));
}

// A policy name among `names` (parse: the enum, or nullopt).
template <typename Parse>
auto Policy(const json::object& obj, std::string_view key, Parse parse, std::string_view names)
    -> Result<std::optional<typename decltype(parse(std::string_view()))::value_type>> {
  using E = typename decltype(parse(std::string_view()))::value_type;
  Result<std::optional<std::string>> s = String(obj, key, 32);
  if (!s.ok()) return s.status();
  if (!*s) return std::optional<E>();
  std::optional<E> e = parse(**s);
  if (!e) {
    return Bad("invalid_value", std::string(key),
               std::string(key) + " must be " + std::string(names) + ", not \"" + **s + "\"");
  }
  return std::optional<E>(*e);
}

// Every field of a create or a patch, as a patch. `patch`: a PATCH body
// (no id; null removes the bounds).
Status ParseFields(const json::object& obj, const ApiLimits& limits, std::int64_t now_ms,
                   bool patch, SchedulePatch& out, std::optional<TimerSpec>& delivery) {
  KnownFields create = {"id", "every_ms", "anchor_ms", "cron", "time_zone", "dst_gap",
                        "dst_overlap", "start_ms", "end_ms", "max_occurrences", "jitter_ms",
                        "overlap", "catch_up", "catch_up_window_ms", "catch_up_max", "target",
                        "flow", "payload", "retry"};
  KnownFields update = {"every_ms", "anchor_ms", "cron", "time_zone", "dst_gap", "dst_overlap",
                        "start_ms", "end_ms", "max_occurrences", "jitter_ms", "overlap",
                        "catch_up", "catch_up_window_ms", "catch_up_max", "target", "flow",
                        "payload", "retry"};
  if (Status s = CheckFields(obj, patch ? update : create, ""); !s.ok()) return s;
  if (obj.contains("every_ms") && obj.contains("cron")) {
    return Bad("conflicting_fields", "cron", "give either every_ms or cron, not both");
  }
  auto every = Bounded(obj, "every_ms", kMinEveryMs, kMaxEveryMs,
                       " (a schedule fires at most once a second)");
  if (!every.ok()) return every.status();
  out.every_ms = *every;
  auto anchor = Integer(obj, "anchor_ms", "");
  if (!anchor.ok()) return anchor.status();
  out.anchor_ms = *anchor;
  auto cron = String(obj, "cron", kMaxCronLength);
  if (!cron.ok()) return cron.status();
  out.cron = *cron;
  if (out.cron && out.cron->empty()) return Bad("invalid_value", "cron", "cron is empty");
  auto zone = String(obj, "time_zone", kMaxZoneLength);
  if (!zone.ok()) return zone.status();
  out.time_zone = *zone;
  auto gap = String(obj, "dst_gap", 32);
  if (!gap.ok()) return gap.status();
  if (*gap) {
    Result<DstGap> g = ParseDstGap(**gap);
    if (!g.ok()) return Bad("invalid_value", "dst_gap", g.status().message());
    out.dst_gap = *g;
  }
  auto overlap_time = String(obj, "dst_overlap", 32);
  if (!overlap_time.ok()) return overlap_time.status();
  if (*overlap_time) {
    Result<DstOverlap> o = ParseDstOverlap(**overlap_time);
    if (!o.ok()) return Bad("invalid_value", "dst_overlap", o.status().message());
    out.dst_overlap = *o;
  }
  const std::int64_t latest = now_ms + limits.horizon_ms;
  auto start = Removable<std::int64_t>(obj, "start_ms", 0, latest);
  if (!start.ok()) return start.status();
  out.start_ms = *start;
  auto end = Removable<std::int64_t>(obj, "end_ms", 0, INT64_MAX);
  if (!end.ok()) return end.status();
  out.end_ms = *end;
  auto max = Removable<std::uint32_t>(obj, "max_occurrences", 1, kMaxOccurrencesLimit);
  if (!max.ok()) return max.status();
  out.max_occurrences = *max;
  auto jitter = Bounded(obj, "jitter_ms", 0, kMaxJitterMs);
  if (!jitter.ok()) return jitter.status();
  out.jitter_ms = *jitter;
  auto overlap = Policy(obj, "overlap", ParseOverlapPolicy, "allow, skip or buffer_one");
  if (!overlap.ok()) return overlap.status();
  out.overlap = *overlap;
  auto catch_up = Policy(obj, "catch_up", ParseCatchUpPolicy, "none, latest or all");
  if (!catch_up.ok()) return catch_up.status();
  out.catch_up = *catch_up;
  auto window = Bounded(obj, "catch_up_window_ms", kMinCatchUpWindowMs, kMaxCatchUpWindowMs);
  if (!window.ok()) return window.status();
  out.catch_up_window_ms = *window;
  auto catch_up_max = Bounded(obj, "catch_up_max", 1, kMaxCatchUpMax);
  if (!catch_up_max.ok()) return catch_up_max.status();
  if (*catch_up_max) out.catch_up_max = static_cast<std::uint32_t>(**catch_up_max);
  // What each occurrence delivers.
  if (!patch || obj.contains("target") || obj.contains("flow") || obj.contains("payload") ||
      obj.contains("retry")) {
    TimerSpec spec;
    spec.max_attempts = limits.default_max_attempts;
    spec.backoff_ms = limits.default_backoff_ms;
    if (Status s = ParseDelivery(obj, limits, "", spec, !patch); !s.ok()) return s;
    if (!patch || obj.contains("target")) {
      out.target = spec.target;
      out.headers = spec.headers;
    }
    if (obj.contains("flow")) out.flow = spec.flow;
    if (!patch || obj.contains("payload")) out.payload = spec.payload;
    const json::value* retry = obj.if_contains("retry");
    if (!patch || (retry && retry->as_object().contains("max_attempts"))) {
      out.max_attempts = spec.max_attempts;
    }
    if (!patch || (retry && retry->as_object().contains("backoff_ms"))) {
      out.backoff_ms = spec.backoff_ms;
    }
    if (!patch || obj.contains("target")) delivery = std::move(spec);
  }
  return Status::Ok();
}

}  // namespace

Result<ScheduleRecord> ParseScheduleCreate(const json::value& body, const ApiLimits& limits,
                                           std::int64_t now_ms, TimerSpec& delivery) {
  if (!body.is_object()) {
    return Bad("invalid_type", "", "a schedule must be a JSON object, not " +
                                       std::string(KindName(body)));
  }
  const json::object& obj = body.as_object();
  SchedulePatch fields;
  std::optional<TimerSpec> spec;
  if (Status s = ParseFields(obj, limits, now_ms, false, fields, spec); !s.ok()) return s;
  ScheduleRecord r;
  const json::value* id = obj.if_contains("id");
  if (id == nullptr) {
    return Bad("missing_field", "id", "a schedule needs an id (its name, and the dedup key of "
                                      "its create)");
  }
  if (!id->is_string()) {
    return Bad("invalid_type", "id", std::string("id must be a string, not ") + KindName(*id));
  }
  if (Status s = ValidateId(id->as_string(), "id"); !s.ok()) return s;
  r.id = std::string(id->as_string());
  if (!fields.every_ms && !fields.cron) {
    return Bad("missing_field", "every_ms",
               "a schedule needs every_ms (an interval) or cron (with an optional time_zone)");
  }
  r.spec.every_ms = fields.every_ms;
  r.spec.anchor_ms = fields.anchor_ms.value_or(0);
  r.spec.cron = fields.cron.value_or("");
  r.spec.time_zone = fields.time_zone.value_or("");
  r.spec.dst_gap = fields.dst_gap.value_or(DstGap::kShift);
  r.spec.dst_overlap = fields.dst_overlap.value_or(DstOverlap::kFirst);
  r.start_ms = fields.start_ms.value_or(std::nullopt);
  r.end_ms = fields.end_ms.value_or(std::nullopt);
  r.max_occurrences = fields.max_occurrences.value_or(std::nullopt);
  r.jitter_ms = fields.jitter_ms.value_or(0);
  r.overlap = fields.overlap.value_or(OverlapPolicy::kAllow);
  r.catch_up = fields.catch_up.value_or(CatchUpPolicy::kLatest);
  r.catch_up_window_ms = fields.catch_up_window_ms.value_or(
      r.catch_up == CatchUpPolicy::kNone ? kDefaultNoneWindowMs : kDefaultCatchUpWindowMs);
  r.catch_up_max = fields.catch_up_max.value_or(kDefaultCatchUpMax);
  r.target = *fields.target;
  r.flow = fields.flow.value_or("");
  r.headers = *fields.headers;
  r.payload = *fields.payload;
  r.max_attempts = *fields.max_attempts;
  r.backoff_ms = *fields.backoff_ms;
  if (Status s = CheckSchedule(r); !s.ok()) return s;
  r.digest = Sha256(CanonicalJson(body));
  delivery = std::move(*spec);
  return r;
}

Result<SchedulePatch> ParseSchedulePatch(const json::value& body, const ApiLimits& limits,
                                         std::int64_t now_ms, std::optional<TimerSpec>& delivery) {
  if (!body.is_object()) {
    return Bad("invalid_type", "", "a schedule's changes must be a JSON object, not " +
                                       std::string(KindName(body)));
  }
  SchedulePatch patch;
  if (Status s = ParseFields(body.as_object(), limits, now_ms, true, patch, delivery); !s.ok()) {
    return s;
  }
  if (patch.empty()) {
    return Bad("missing_field", "", "the body changes nothing: give the fields to change");
  }
  return patch;
}

Result<BackfillRange> ParseBackfill(const json::value& body, std::int64_t now_ms) {
  if (!body.is_object()) {
    return Bad("invalid_type", "", "a backfill must be {\"from_ms\": T1, \"to_ms\": T2}");
  }
  const json::object& obj = body.as_object();
  if (Status s = CheckFields(obj, {"from_ms", "to_ms"}, ""); !s.ok()) return s;
  auto from = Integer(obj, "from_ms", "");
  if (!from.ok()) return from.status();
  auto to = Integer(obj, "to_ms", "");
  if (!to.ok()) return to.status();
  if (!*from) return Bad("missing_field", "from_ms", "a backfill needs from_ms (Unix ms)");
  if (!*to) return Bad("missing_field", "to_ms", "a backfill needs to_ms (Unix ms, exclusive)");
  if (**from < kMinOccurrenceMs) {
    return Bad("out_of_range", "from_ms",
               "from_ms must be at or after 1000000000000 (2001-09-09T01:46:40Z): occurrence "
               "ids carry 13-digit times");
  }
  if (**to <= **from) return Bad("invalid_value", "to_ms", "to_ms must be after from_ms");
  if (**to > now_ms + 1) {
    return Bad("out_of_range", "to_ms",
               "to_ms is in the future: a backfill fires past times (the schedule fires the "
               "future ones)");
  }
  return BackfillRange{**from, **to};
}

Result<ScheduleListQuery> ParseScheduleListQuery(std::string_view query) {
  ScheduleListQuery out;
  Status s = ForEachParameter(query, [&](const std::string& key, const std::string& value) {
    if (key == "state") {
      out.state = ParseScheduleState(value);
      if (!out.state) {
        return Bad("invalid_value", "state",
                   "state must be active, paused or ended, not \"" + value.substr(0, 64) + "\"");
      }
    } else if (key == "limit") {
      std::size_t n = 0;
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec != std::errc() || end != value.data() + value.size() || n < 1 || n > 1000) {
        return Bad("invalid_value", "limit", "limit must be an integer 1..1000");
      }
      out.limit = n;
    } else if (key == "after") {
      if (Status v = ValidateId(value, "after"); !v.ok()) {
        return Bad("invalid_value", "after", "after must be the next_after of a previous page");
      }
      out.after = value;
    } else if (key == "prefix") {
      if (Status v = ValidateIdPrefix(value, "prefix"); !v.ok()) return v;
      out.prefix = value;
    } else if (key == "show_headers") {
      Result<bool> b = ParseBool(key, value);
      if (!b.ok()) return b.status();
      out.show_headers = *b;
    } else {
      return Bad("unknown_field", key.substr(0, 64),
                 "unknown query parameter \"" + key.substr(0, 64) +
                     "\"; known: state, prefix, limit, after, show_headers");
    }
    return Status::Ok();
  });
  if (!s.ok()) return s;
  return out;
}

Result<ScheduleGetQuery> ParseScheduleGetQuery(std::string_view query) {
  ScheduleGetQuery out;
  Status s = ForEachParameter(query, [&](const std::string& key, const std::string& value) {
    if (key == "next") {
      std::size_t n = 0;
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec != std::errc() || end != value.data() + value.size() || n > 100) {
        return Bad("invalid_value", "next", "next must be an integer 0..100");
      }
      out.next = n;
    } else if (key == "show_headers") {
      Result<bool> b = ParseBool(key, value);
      if (!b.ok()) return b.status();
      out.show_headers = *b;
    } else {
      return Bad("unknown_field", key.substr(0, 64),
                 "unknown query parameter \"" + key.substr(0, 64) + "\"; known: next, show_headers");
    }
    return Status::Ok();
  });
  if (!s.ok()) return s;
  return out;
}

}  // namespace tickwheel::server
