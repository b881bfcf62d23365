// SPDX-License-Identifier: Apache-2.0
#include "api/timer_request.h"

#include <boost/json.hpp>
#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <set>

#include "api/json_body.h"
#include "common/ascii_case.h"
#include "common/sha256.h"
#include "timer/flow_key.h"
#include "timer/http_url.h"
#include "timer/occurrence_id.h"
#include "timer/target.h"

namespace tickwheel::server {

namespace json = boost::json;

namespace {

using request_error::Bad;

std::string Name(std::string_view prefix, std::string_view key) {
  return std::string(prefix) + std::string(key);
}

}  // namespace

const char* KindName(const json::value& v) {
  switch (v.kind()) {
    case json::kind::null: return "null";
    case json::kind::bool_: return "a boolean";
    case json::kind::int64:
    case json::kind::uint64: return "an integer";
    case json::kind::double_: return "a number with a fraction";
    case json::kind::string: return "a string";
    case json::kind::array: return "an array";
    case json::kind::object: return "an object";
  }
  return "?";
}

namespace {

// A number that parsed as infinity (1e400): it cannot be written back as JSON.
bool HasNonFinite(const json::value& v) {
  if (v.is_double()) return !std::isfinite(v.as_double());
  if (v.is_array()) {
    return std::any_of(v.as_array().begin(), v.as_array().end(), HasNonFinite);
  }
  if (v.is_object()) {
    return std::any_of(v.as_object().begin(), v.as_object().end(),
                       [](const auto& kv) { return HasNonFinite(kv.value()); });
  }
  return false;
}

using Known = KnownFields;

// Levenshtein distance where swapping two neighbours costs 1 (optimal
// string alignment): "dealy_ms" is 1 from "delay_ms".
std::size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

}  // namespace

std::string SuggestField(std::string_view key, std::initializer_list<std::string_view> known) {
  // Near enough to be a typo: at most 2 edits, and fewer than a third of
  // the name (so "id" is not suggested for "ab"). Unknown keys are cut to
  // 64 characters before they get here.
  const std::string_view k64 = key.substr(0, 64);
  std::string_view best;
  std::size_t best_distance = 3;
  for (std::string_view k : known) {
    const std::size_t distance = EditDistance(k64, k);
    if (distance < best_distance && distance * 3 < k.size()) {
      best = k;
      best_distance = distance;
    }
  }
  return best.empty() ? "" : " (did you mean \"" + std::string(best) + "\"?)";
}

namespace {

std::string Suggest(std::string_view key, Known known) { return SuggestField(key, known); }

}  // namespace

Status CheckFields(const json::object& obj, Known known, std::string_view prefix) {
  for (const auto& kv : obj) {
    const std::string_view key = kv.key();
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      std::string list;
      for (std::string_view k : known) list += (list.empty() ? "" : ", ") + std::string(k);
      return Bad("unknown_field", Name(prefix, key),
                 "unknown field \"" + Name(prefix, key) + "\"" + Suggest(key, known) +
                     "; known fields: " + list);
    }
  }
  return Status::Ok();
}

// An integer field; nullopt if absent. Rejects fractions and non-numbers.
Result<std::optional<std::int64_t>> Integer(const json::object& obj, std::string_view key,
                                            std::string_view prefix) {
  const json::value* v = obj.if_contains(key);
  if (v == nullptr) return std::optional<std::int64_t>();
  if (v->is_int64()) return std::optional<std::int64_t>(v->as_int64());
  if (v->is_uint64()) {
    return Status::Invalid("out_of_range", Name(prefix, key) + " is too large", Name(prefix, key));
  }
  return Bad("invalid_type", Name(prefix, key),
             Name(prefix, key) + " must be an integer, not " + KindName(*v));
}

namespace {

// "3650 days", "36 hours", "90 minutes", "1500 ms": the largest unit that
// divides the horizon, so the figure reads as the flag was given.
std::string HorizonText(std::int64_t ms) {
  struct Unit {
    std::int64_t ms;
    const char* name;
  };
  for (Unit u : {Unit{86'400'000, "days"}, Unit{3'600'000, "hours"}, Unit{60'000, "minutes"},
                 Unit{1000, "seconds"}}) {
    if (ms >= u.ms && ms % u.ms == 0) return std::to_string(ms / u.ms) + " " + u.name;
  }
  return std::to_string(ms) + " ms";
}

// delay_ms | fire_at_ms -> absolute fire time.
Result<std::int64_t> FireTime(const json::object& obj, const ApiLimits& limits,
                              std::int64_t now_ms, std::string_view prefix) {
  auto delay = Integer(obj, "delay_ms", prefix);
  if (!delay.ok()) return delay.status();
  auto at = Integer(obj, "fire_at_ms", prefix);
  if (!at.ok()) return at.status();
  const std::optional<std::int64_t>& d = *delay;
  const std::optional<std::int64_t>& a = *at;
  if (d && a) {
    return Bad("conflicting_fields", Name(prefix, "delay_ms"),
               "give either delay_ms or fire_at_ms, not both");
  }
  if (!d && !a) {
    return Bad("missing_field", Name(prefix, "delay_ms"),
               "a timer needs delay_ms (from now) or fire_at_ms (Unix ms)");
  }
  if (d) {
    if (*d < 0) {
      return Bad("negative_delay", Name(prefix, "delay_ms"),
                 Name(prefix, "delay_ms") + " is negative (" + std::to_string(*d) +
                     "); use 0 to fire now");
    }
    if (*d > limits.horizon_ms) {
      return Bad("beyond_horizon", Name(prefix, "delay_ms"),
                 Name(prefix, "delay_ms") + " is beyond the server's horizon of " +
                     HorizonText(limits.horizon_ms) + " (--horizon)");
    }
    return now_ms + *d;
  }
  if (*a < 0) {
    return Bad("invalid_value", Name(prefix, "fire_at_ms"),
               Name(prefix, "fire_at_ms") + " is negative; it is Unix time in ms");
  }
  if (*a > now_ms + limits.horizon_ms) {
    return Bad("beyond_horizon", Name(prefix, "fire_at_ms"),
               Name(prefix, "fire_at_ms") + " is beyond the server's horizon of " +
                   HorizonText(limits.horizon_ms) +
                   " from now (--horizon; is it in microseconds instead of ms?)");
  }
  return std::max(*a, now_ms);  // the past fires now
}

bool IsTokenChar(char c) {  // RFC 9110 tchar
  return std::isalnum(static_cast<unsigned char>(c)) ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

// Headers a target may not set: hop-by-hop and framing headers, and those
// the server sets itself on every attempt.
constexpr std::array<std::string_view, 14> kReservedHeaders = {
    "connection", "keep-alive", "proxy-connection", "transfer-encoding", "te",
    "trailer", "upgrade", "content-length", "host", "content-type",
    "idempotency-key", "webhook-id", "webhook-timestamp", "webhook-signature"};

Status ParseHeaders(const json::value& v, const std::string& field, TimerSpec& spec) {
  if (!v.is_object()) {
    return Bad("invalid_type", field, field + " must be an object of strings, not " + KindName(v));
  }
  const json::object& headers = v.as_object();
  if (headers.size() > kMaxTargetHeaders) {
    return Bad("out_of_range", field,
               field + " has " + std::to_string(headers.size()) + " headers; at most " +
                   std::to_string(kMaxTargetHeaders));
  }
  std::size_t bytes = 0;
  std::set<std::string> seen;
  for (const auto& kv : headers) {
    const std::string name(kv.key());
    const std::string named = field + "." + name;
    if (name.empty() || !std::all_of(name.begin(), name.end(), IsTokenChar)) {
      return Bad("invalid_value", named, "\"" + name + "\" is not a header name");
    }
    const std::string lower = AsciiLower(name);
    if (std::find(kReservedHeaders.begin(), kReservedHeaders.end(), lower) !=
        kReservedHeaders.end()) {
      return Bad("reserved_header", named,
                 "header " + name +
                     " cannot be set by a target (hop-by-hop, framing, or set by the server)");
    }
    if (!seen.insert(lower).second) {
      return Bad("invalid_value", named, "header " + name + " is given twice");
    }
    if (!kv.value().is_string()) {
      return Bad("invalid_type", named, named + " must be a string, not " + KindName(kv.value()));
    }
    const json::string& value = kv.value().as_string();
    for (char c : value) {
      if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f) {
        return Bad("invalid_value", named, "the value of header " + name +
                                               " has a control character (CR, LF, ...)");
      }
    }
    bytes += name.size() + value.size();
    if (bytes > kMaxTargetHeaderBytes) {
      return Bad("out_of_range", field,
                 field + " is over " + std::to_string(kMaxTargetHeaderBytes) + " bytes");
    }
    spec.headers.emplace_back(name, std::string(value));
  }
  return Status::Ok();
}

// Sets spec.target, its headers and its default flow (ParseTimerSpec puts
// a flow the body names in its place).
Status ParseTarget(const json::value* v, std::string_view prefix, const ApiLimits& limits,
                   TimerSpec& spec) {
  const std::string field = Name(prefix, "target");
  if (v == nullptr) {
    return Bad("missing_field", field,
               "a timer needs a target: {\"url\": \"http://host:port/path\"}");
  }
  if (!v->is_object()) {
    return Bad("invalid_type", field, field + " must be an object, not " + KindName(*v));
  }
  const json::object& t = v->as_object();
  if (Status s = CheckFields(t, {"url", "nats", "headers"}, field + "."); !s.ok()) return s;
  if (t.contains("url") && t.contains("nats")) {
    return Bad("conflicting_fields", field + ".url",
               field + " takes either url or nats, not both");
  }
  if (const json::value* nats = t.if_contains("nats")) {
    if (!nats->is_string()) {
      return Bad("invalid_type", field + ".nats",
                 field + ".nats must be a string (a subject), not " + KindName(*nats));
    }
    if (!limits.nats_enabled) {
      return Bad("unsupported_target", field + ".nats",
                 "this server was started without --nats: NATS targets are not available; "
                 "use an http:// url");
    }
    if (t.contains("headers")) {
      return Bad("conflicting_fields", field + ".headers", "headers apply to url targets only");
    }
    if (Status s = CheckNatsSubject(nats->as_string()); !s.ok()) {
      return Bad(s.reason(), field + ".nats", field + ".nats: " + s.message());
    }
    spec.target = std::string(kNatsPrefix) + std::string(nats->as_string());
    spec.flow = DefaultFlowKey(spec.target);
    return Status::Ok();
  }
  const json::value* url = t.if_contains("url");
  if (url == nullptr) return Bad("missing_field", field + ".url", field + " needs a url");
  if (!url->is_string()) {
    return Bad("invalid_type", field + ".url", field + ".url must be a string, not " + KindName(*url));
  }
  const std::string_view text = url->as_string();
  if (text.size() > 2048) {
    return Bad("invalid_value", field + ".url", field + ".url is longer than 2048 characters");
  }
  Result<HttpUrl> parsed = ParseHttpUrl(text);
  if (!parsed.ok()) {
    return Bad(parsed.status().reason(), field + ".url", field + ".url: " + parsed.status().message());
  }
  if (parsed->tls && !limits.https_enabled) {
    return Bad("unsupported_target", field + ".url",
               field + ".url: https:// targets are not supported by this server");
  }
  if (const json::value* headers = t.if_contains("headers")) {
    if (Status s = ParseHeaders(*headers, field + ".headers", spec); !s.ok()) return s;
  }
  spec.target = std::string(text);
  spec.flow = DefaultFlowKey(*parsed);  // the URL parsed once
  return Status::Ok();
}

Status ParseRetry(const json::value* v, std::string_view prefix, TimerSpec& spec) {
  if (v == nullptr) return Status::Ok();
  const std::string field = Name(prefix, "retry");
  if (!v->is_object()) {
    return Bad("invalid_type", field, field + " must be an object, not " + KindName(*v));
  }
  const json::object& r = v->as_object();
  if (Status s = CheckFields(r, {"max_attempts", "backoff_ms"}, field + "."); !s.ok()) return s;
  auto attempts = Integer(r, "max_attempts", field + ".");
  if (!attempts.ok()) return attempts.status();
  if (const auto& a = *attempts) {
    if (*a < 1 || *a > 100) {
      return Bad("out_of_range", field + ".max_attempts",
                 field + ".max_attempts must be 1..100, not " + std::to_string(*a));
    }
    spec.max_attempts = static_cast<std::uint32_t>(*a);
  }
  auto backoff = Integer(r, "backoff_ms", field + ".");
  if (!backoff.ok()) return backoff.status();
  if (const auto& b = *backoff) {
    if (*b < 1 || *b > 24LL * 3600 * 1000) {
      return Bad("out_of_range", field + ".backoff_ms",
                 field + ".backoff_ms must be 1..86400000 (a day), not " + std::to_string(*b));
    }
    spec.backoff_ms = static_cast<std::uint32_t>(*b);
  }
  return Status::Ok();
}

Status ParsePayload(const json::value* p, std::string_view prefix, const ApiLimits& limits,
                    TimerSpec& spec) {
  if (p == nullptr) return Status::Ok();
  if (HasNonFinite(*p)) {
    return Bad("invalid_value", Name(prefix, "payload"),
               Name(prefix, "payload") + " has a number beyond what JSON numbers can carry "
               "(larger than about 1.8e308)");
  }
  spec.payload = json::serialize(*p);
  if (spec.payload.size() > limits.payload_limit) {
    return Status::TooLarge("payload_too_large",
                            Name(prefix, "payload") + " is " +
                                std::to_string(spec.payload.size()) +
                                " bytes; the limit is " + std::to_string(limits.payload_limit),
                            Name(prefix, "payload"));
  }
  return Status::Ok();
}

}  // namespace

Status ParseDelivery(const json::object& obj, const ApiLimits& limits, std::string_view prefix,
                     TimerSpec& spec, bool target_required) {
  const bool has_target = target_required || obj.contains("target");
  if (has_target) {
    if (Status s = ParseTarget(obj.if_contains("target"), prefix, limits, spec); !s.ok()) return s;
  }
  if (const json::value* flow = obj.if_contains("flow")) {
    if (!flow->is_string()) {
      return Bad("invalid_type", Name(prefix, "flow"),
                 Name(prefix, "flow") + " must be a string (a flow key), not " + KindName(*flow));
    }
    if (Status s = CheckFlowKey(flow->as_string(), Name(prefix, "flow")); !s.ok()) return s;
    spec.flow = std::string(flow->as_string());
  }
  if (Status s = ParseRetry(obj.if_contains("retry"), prefix, spec); !s.ok()) return s;
  return ParsePayload(obj.if_contains("payload"), prefix, limits, spec);
}

Status ValidateId(std::string_view id, std::string_view field) {
  if (id.empty() || id.size() > kMaxIdLength) {
    return Bad("invalid_id", std::string(field),
               std::string(field) + " must be 1.." + std::to_string(kMaxIdLength) +
                   " characters long, not " + std::to_string(id.size()));
  }
  for (char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '~' || c == '-';
    if (!ok) {
      return Bad("invalid_id", std::string(field),
                 std::string(field) +
                     (c == '@' ? " may not contain '@': it is kept for the occurrences of "
                                 "schedules (\"<schedule>@<time>\")"
                               : " may only contain letters, digits and . _ ~ - (found a "
                                 "forbidden character)"));
    }
  }
  return Status::Ok();
}

Status ValidateTimerPathId(std::string_view id) {
  if (std::optional<OccurrenceName> occurrence = ParseOccurrenceId(id)) {
    return ValidateId(occurrence->schedule_id, "id");
  }
  return ValidateId(id, "id");
}

Result<TimerSpec> ParseTimerSpec(const json::value& body, const ApiLimits& limits,
                                 std::int64_t now_ms, std::string_view prefix) {
  if (!body.is_object()) {
    return Bad("invalid_type", std::string(prefix),
               "a timer must be a JSON object, not " + std::string(KindName(body)));
  }
  const json::object& obj = body.as_object();
  if (Status s = CheckFields(obj,
                             {"id", "delay_ms", "fire_at_ms", "payload", "target", "retry", "flow"},
                             prefix);
      !s.ok()) {
    return s;
  }
  TimerSpec spec;
  spec.max_attempts = limits.default_max_attempts;
  spec.backoff_ms = limits.default_backoff_ms;
  if (const json::value* id = obj.if_contains("id")) {
    if (!id->is_string()) {
      return Bad("invalid_type", Name(prefix, "id"),
                 Name(prefix, "id") + " must be a string, not " + KindName(*id));
    }
    if (Status s = ValidateId(id->as_string(), Name(prefix, "id")); !s.ok()) return s;
    spec.id = std::string(id->as_string());
  }
  Result<std::int64_t> fire = FireTime(obj, limits, now_ms, prefix);
  if (!fire.ok()) return fire.status();
  spec.fire_at_ms = *fire;
  if (Status s = ParseDelivery(obj, limits, prefix, spec); !s.ok()) return s;
  spec.digest = Sha256(CanonicalJson(body));
  return spec;
}

Result<std::vector<TimerSpec>> ParseBatch(const json::value& body, const ApiLimits& limits,
                                          std::int64_t now_ms) {
  if (!body.is_object()) return Bad("invalid_type", "", "a batch must be {\"timers\": [...]}");
  const json::object& obj = body.as_object();
  if (Status s = CheckFields(obj, {"timers"}, ""); !s.ok()) return s;
  const json::value* timers = obj.if_contains("timers");
  if (timers == nullptr || !timers->is_array()) {
    return Bad(timers ? "invalid_type" : "missing_field", "timers",
               "a batch must be {\"timers\": [...]}");
  }
  const json::array& arr = timers->as_array();
  if (arr.empty()) return Bad("invalid_value", "timers", "timers is empty");
  if (arr.size() > limits.max_batch) {
    return Status::TooLarge("batch_too_large",
                            "timers has " + std::to_string(arr.size()) +
                                " entries; the limit is " + std::to_string(limits.max_batch),
                            "timers");
  }
  std::vector<TimerSpec> specs;
  specs.reserve(arr.size());
  for (std::size_t i = 0; i < arr.size(); ++i) {
    const std::string prefix = "timers[" + std::to_string(i) + "].";
    Result<TimerSpec> spec = ParseTimerSpec(arr[i], limits, now_ms, prefix);
    if (!spec.ok()) return spec.status();
    specs.push_back(std::move(*spec));
  }
  std::set<std::string_view> ids;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    if (specs[i].id && !ids.insert(*specs[i].id).second) {
      return Bad("duplicate_id", "timers[" + std::to_string(i) + "].id",
                 "id \"" + *specs[i].id + "\" appears twice in the batch");
    }
  }
  return specs;
}

Result<std::int64_t> ParseReschedule(const json::value& body, const ApiLimits& limits,
                                     std::int64_t now_ms) {
  if (!body.is_object()) {
    return Bad("invalid_type", "", "the body must be {\"delay_ms\": N} or {\"fire_at_ms\": T}");
  }
  const json::object& obj = body.as_object();
  if (Status s = CheckFields(obj, {"delay_ms", "fire_at_ms"}, ""); !s.ok()) return s;
  return FireTime(obj, limits, now_ms, "");
}

bool SameCreate(const TimerRecord& existing, const TimerSpec& spec) {
  if (existing.digest_kind == DigestKind::kSha256) return existing.digest == spec.digest;
  // Stored before digests were stable: what can still be compared.
  if (existing.target != spec.target || existing.max_attempts != spec.max_attempts ||
      existing.backoff_ms != spec.backoff_ms || existing.flow != spec.flow) {
    return false;
  }
  Result<json::value> stored = ParseJsonBody(existing.payload);
  Result<json::value> asked = ParseJsonBody(spec.payload);
  return stored.ok() && asked.ok() && CanonicalJson(*stored) == CanonicalJson(*asked);
}

}  // namespace tickwheel::server
