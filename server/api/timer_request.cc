#include "api/timer_request.h"

#include <boost/json.hpp>
#include <algorithm>
#include <set>

#include "delivery/http_url.h"

namespace tickwheel::server {

namespace json = boost::json;

std::string ErrorBody(const ApiError& e) {
  json::object err{{"code", e.code}, {"message", e.message}};
  if (!e.field.empty()) err["field"] = e.field;
  return json::serialize(json::object{{"error", std::move(err)}});
}

namespace {

ApiError Bad(std::string code, std::string field, std::string message,
             int status = 400) {
  return ApiError{status, std::move(code), std::move(message), std::move(field)};
}

std::string Name(std::string_view prefix, std::string_view key) {
  return std::string(prefix) + std::string(key);
}

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

// Likely typos of known fields, to suggest the right name.
using Known = std::initializer_list<std::string_view>;

std::string Suggest(std::string_view key, Known known) {
  for (std::string_view k : known) {
    if (key.size() >= 3 && k.substr(0, 3) == key.substr(0, 3)) {
      return " (did you mean \"" + std::string(k) + "\"?)";
    }
  }
  return "";
}

std::optional<ApiError> CheckFields(const json::object& obj, Known known,
                                    std::string_view prefix) {
  for (const auto& kv : obj) {
    const std::string_view key = kv.key();
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      std::string list;
      for (std::string_view k : known) list += (list.empty() ? "" : ", ") + std::string(k);
      return Bad("unknown_field", Name(prefix, key),
                 "unknown field \"" + Name(prefix, key) + "\"" +
                     Suggest(key, known) + "; known fields: " + list);
    }
  }
  return std::nullopt;
}

// An integer field; nullopt if absent. Rejects fractions and non-numbers.
ApiResult<std::optional<std::int64_t>> Integer(const json::object& obj,
                                               std::string_view key,
                                               std::string_view prefix) {
  const json::value* v = obj.if_contains(key);
  if (v == nullptr) return std::optional<std::int64_t>();
  if (v->is_int64()) return std::optional<std::int64_t>(v->as_int64());
  if (v->is_uint64()) {
    return Bad("out_of_range", Name(prefix, key),
               Name(prefix, key) + " is too large");
  }
  return Bad("invalid_type", Name(prefix, key),
             Name(prefix, key) + " must be an integer, not " + KindName(*v));
}

// delay_ms | fire_at_ms -> absolute fire time.
ApiResult<std::int64_t> FireTime(const json::object& obj,
                                 const ApiLimits& limits, std::int64_t now_ms,
                                 std::string_view prefix) {
  auto delay = Integer(obj, "delay_ms", prefix);
  if (auto* e = std::get_if<ApiError>(&delay)) return *e;
  auto at = Integer(obj, "fire_at_ms", prefix);
  if (auto* e = std::get_if<ApiError>(&at)) return *e;
  const auto& d = std::get<0>(delay);
  const auto& a = std::get<0>(at);
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
                     std::to_string(limits.horizon_ms) + " ms");
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
                   std::to_string(limits.horizon_ms) +
                   " ms from now (is it in seconds or microseconds instead of ms?)");
  }
  return std::max(*a, now_ms);  // the past fires now
}

std::optional<ApiError> ParseTarget(const json::value* v, std::string_view prefix,
                                    const ApiLimits& limits, TimerSpec& spec) {
  const std::string field = Name(prefix, "target");
  if (v == nullptr) {
    return Bad("missing_field", field,
               "a timer needs a target: {\"url\": \"http://host:port/path\"}");
  }
  if (!v->is_object()) {
    return Bad("invalid_type", field, field + " must be an object, not " + KindName(*v));
  }
  const json::object& t = v->as_object();
  if (auto e = CheckFields(t, {"url", "nats"}, field + ".")) return e;
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
                 "this server was started without --nats: NATS targets are not "
                 "available; use an http:// url");
    }
    if (auto error = NatsSubjectError(nats->as_string())) {
      return Bad("invalid_value", field + ".nats", field + ".nats: " + *error);
    }
    spec.url = std::string(kNatsPrefix) + std::string(nats->as_string());
    return std::nullopt;
  }
  const json::value* url = t.if_contains("url");
  if (url == nullptr) {
    return Bad("missing_field", field + ".url", field + " needs a url");
  }
  if (!url->is_string()) {
    return Bad("invalid_type", field + ".url",
               field + ".url must be a string, not " + KindName(*url));
  }
  std::string error;
  bool unsupported = false;
  const std::string_view text = url->as_string();
  if (text.size() > 2048) {
    return Bad("invalid_value", field + ".url", field + ".url is longer than 2048 characters");
  }
  if (!ParseHttpUrl(text, &error, &unsupported)) {
    return Bad(unsupported ? "unsupported_target" : "invalid_value",
               field + ".url", field + ".url: " + error);
  }
  spec.url = std::string(text);
  return std::nullopt;
}

std::optional<ApiError> ParseRetry(const json::value* v, std::string_view prefix,
                                   TimerSpec& spec) {
  if (v == nullptr) return std::nullopt;
  const std::string field = Name(prefix, "retry");
  if (!v->is_object()) {
    return Bad("invalid_type", field, field + " must be an object, not " + KindName(*v));
  }
  const json::object& r = v->as_object();
  if (auto e = CheckFields(r, {"max_attempts", "backoff_ms"}, field + ".")) return e;
  auto attempts = Integer(r, "max_attempts", field + ".");
  if (auto* e = std::get_if<ApiError>(&attempts)) return *e;
  if (auto a = std::get<0>(attempts)) {
    if (*a < 1 || *a > 100) {
      return Bad("out_of_range", field + ".max_attempts",
                 field + ".max_attempts must be 1..100, not " + std::to_string(*a));
    }
    spec.max_attempts = static_cast<std::uint32_t>(*a);
  }
  auto backoff = Integer(r, "backoff_ms", field + ".");
  if (auto* e = std::get_if<ApiError>(&backoff)) return *e;
  if (auto b = std::get<0>(backoff)) {
    if (*b < 1 || *b > 24LL * 3600 * 1000) {
      return Bad("out_of_range", field + ".backoff_ms",
                 field + ".backoff_ms must be 1..86400000 (a day), not " +
                     std::to_string(*b));
    }
    spec.backoff_ms = static_cast<std::uint32_t>(*b);
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> NatsSubjectError(std::string_view subject) {
  if (subject.empty() || subject.size() > 256) return "must be 1..256 characters";
  if (subject.front() == '.' || subject.back() == '.' ||
      subject.find("..") != std::string_view::npos) {
    return "has an empty token (leading, trailing or double '.')";
  }
  for (char c : subject) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) return "contains a space or control character";
    if (c == '*' || c == '>') return "contains a wildcard ('*' or '>'); publish to one subject";
  }
  return std::nullopt;
}

std::optional<ApiError> ValidateId(std::string_view id, std::string_view field) {
  if (id.empty() || id.size() > kMaxIdLength) {
    return Bad("invalid_id", std::string(field),
               std::string(field) + " must be 1.." + std::to_string(kMaxIdLength) +
                   " characters long, not " + std::to_string(id.size()));
  }
  for (char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '~' ||
                    c == '-';
    if (!ok) {
      return Bad("invalid_id", std::string(field),
                 std::string(field) +
                     " may only contain letters, digits and . _ ~ - (found a "
                     "forbidden character)");
    }
  }
  return std::nullopt;
}

ApiResult<json::value> ParseJsonBody(std::string_view body) {
  boost::system::error_code ec;
  json::parse_options options;
  options.max_depth = 64;
  json::value v = json::parse(body, ec, {}, options);
  if (ec) {
    return Bad("invalid_json", "", "the body is not valid JSON: " + ec.message());
  }
  return v;
}

ApiResult<TimerSpec> ParseTimerSpec(const json::value& body,
                                    const ApiLimits& limits, std::int64_t now_ms,
                                    std::string_view prefix) {
  if (!body.is_object()) {
    return Bad("invalid_type", std::string(prefix),
               "a timer must be a JSON object, not " + std::string(KindName(body)));
  }
  const json::object& obj = body.as_object();
  if (auto e = CheckFields(
          obj, {"id", "delay_ms", "fire_at_ms", "payload", "target", "retry"},
          prefix)) {
    return *e;
  }
  TimerSpec spec;
  spec.max_attempts = limits.default_max_attempts;
  spec.backoff_ms = limits.default_backoff_ms;
  if (const json::value* id = obj.if_contains("id")) {
    if (!id->is_string()) {
      return Bad("invalid_type", Name(prefix, "id"),
                 Name(prefix, "id") + " must be a string, not " + KindName(*id));
    }
    if (auto e = ValidateId(id->as_string(), Name(prefix, "id"))) return *e;
    spec.id = std::string(id->as_string());
  }
  auto fire = FireTime(obj, limits, now_ms, prefix);
  if (auto* e = std::get_if<ApiError>(&fire)) return *e;
  spec.fire_at_ms = std::get<0>(fire);
  if (auto e = ParseTarget(obj.if_contains("target"), prefix, limits, spec)) return *e;
  if (auto e = ParseRetry(obj.if_contains("retry"), prefix, spec)) return *e;
  if (const json::value* p = obj.if_contains("payload")) {
    spec.payload = json::serialize(*p);
    if (spec.payload.size() > limits.payload_limit) {
      return Bad("payload_too_large", Name(prefix, "payload"),
                 Name(prefix, "payload") + " is " + std::to_string(spec.payload.size()) +
                     " bytes; the limit is " + std::to_string(limits.payload_limit),
                 413);
    }
  }
  spec.request_hash = std::hash<std::string>{}(json::serialize(body));
  return spec;
}

ApiResult<std::vector<TimerSpec>> ParseBatch(const json::value& body,
                                             const ApiLimits& limits,
                                             std::int64_t now_ms) {
  if (!body.is_object()) {
    return Bad("invalid_type", "", "a batch must be {\"timers\": [...]}");
  }
  const json::object& obj = body.as_object();
  if (auto e = CheckFields(obj, {"timers"}, "")) return *e;
  const json::value* timers = obj.if_contains("timers");
  if (timers == nullptr || !timers->is_array()) {
    return Bad(timers ? "invalid_type" : "missing_field", "timers",
               "a batch must be {\"timers\": [...]}");
  }
  const json::array& arr = timers->as_array();
  if (arr.empty()) return Bad("invalid_value", "timers", "timers is empty");
  if (arr.size() > limits.max_batch) {
    return Bad("batch_too_large", "timers",
               "timers has " + std::to_string(arr.size()) +
                   " entries; the limit is " + std::to_string(limits.max_batch),
               413);
  }
  std::vector<TimerSpec> specs;
  specs.reserve(arr.size());
  std::set<std::string_view> ids;
  for (std::size_t i = 0; i < arr.size(); ++i) {
    const std::string prefix = "timers[" + std::to_string(i) + "].";
    auto spec = ParseTimerSpec(arr[i], limits, now_ms, prefix);
    if (auto* e = std::get_if<ApiError>(&spec)) return *e;
    specs.push_back(std::move(std::get<0>(spec)));
  }
  for (std::size_t i = 0; i < specs.size(); ++i) {
    if (specs[i].id && !ids.insert(*specs[i].id).second) {
      return Bad("duplicate_id", "timers[" + std::to_string(i) + "].id",
                 "id \"" + *specs[i].id + "\" appears twice in the batch");
    }
  }
  return specs;
}

ApiResult<std::int64_t> ParseReschedule(const json::value& body,
                                        const ApiLimits& limits,
                                        std::int64_t now_ms) {
  if (!body.is_object()) {
    return Bad("invalid_type", "", "the body must be {\"delay_ms\": N} or {\"fire_at_ms\": T}");
  }
  const json::object& obj = body.as_object();
  if (auto e = CheckFields(obj, {"delay_ms", "fire_at_ms"}, "")) return *e;
  return FireTime(obj, limits, now_ms, "");
}

}  // namespace tickwheel::server
