// SPDX-License-Identifier: Apache-2.0
#include "flow/flow_settings.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>

namespace tickwheel::server {

namespace json = boost::json;

namespace {

Status Bad(std::string reason, const std::string& field, std::string message) {
  return Status::Invalid(std::move(reason), std::move(message), field);
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

// An integer field in [lo, hi]; null allowed when `none` is set (then *none).
Result<std::optional<std::int64_t>> Integer(const json::object& obj, const std::string& key,
                                            std::int64_t lo, std::int64_t hi,
                                            std::optional<std::int64_t> none) {
  const json::value* v = obj.if_contains(key);
  if (v == nullptr) return std::optional<std::int64_t>();
  if (v->is_null() && none) return std::optional<std::int64_t>(*none);
  if (!v->is_int64() && !v->is_uint64()) {
    return Bad("invalid_type", key,
               key + " must be an integer" + (none ? " or null (no limit)" : "") + ", not " +
                   KindName(*v));
  }
  if (v->is_uint64() || v->as_int64() < lo || v->as_int64() > hi) {
    return Bad("out_of_range", key,
               key + " must be " + std::to_string(lo) + ".." + std::to_string(hi) +
                   (v->is_int64() ? ", not " + std::to_string(v->as_int64()) : ""));
  }
  return std::optional<std::int64_t>(v->as_int64());
}

}  // namespace

FlowLimits ResolveLimits(const FlowSettings* settings, const FlowDefaults& defaults) {
  FlowLimits out;
  out.rate_per_s = settings && settings->rate_per_s ? *settings->rate_per_s : defaults.rate_per_s;
  out.max_in_flight =
      settings && settings->max_in_flight ? *settings->max_in_flight : defaults.max_in_flight;
  if (out.rate_limited()) {
    out.burst = settings && settings->burst ? static_cast<double>(*settings->burst)
                                            : DefaultBurst(out.rate_per_s);
  }
  out.paused = settings && settings->paused;
  return out;
}

Result<FlowSettings> ParseFlowSettings(const json::value& body) {
  if (!body.is_object()) {
    return Bad("invalid_type", "",
               std::string("a flow's settings must be a JSON object, not ") + KindName(body));
  }
  const json::object& obj = body.as_object();
  static constexpr std::string_view kKnown[] = {"rate_per_s", "burst", "max_in_flight", "paused"};
  for (const auto& kv : obj) {
    if (std::find(std::begin(kKnown), std::end(kKnown), kv.key()) == std::end(kKnown)) {
      return Bad("unknown_field", std::string(kv.key()),
                 "unknown field \"" + std::string(kv.key()) +
                     "\"; known fields: rate_per_s, burst, max_in_flight, paused");
    }
  }
  FlowSettings s;
  if (const json::value* rate = obj.if_contains("rate_per_s")) {
    if (rate->is_null()) {
      s.rate_per_s = kNoRateLimit;
    } else if (!rate->is_number()) {
      return Bad("invalid_type", "rate_per_s",
                 std::string("rate_per_s must be a number or null (no limit), not ") +
                     KindName(*rate));
    } else {
      const double r = rate->to_number<double>();
      if (!(r > 0) || r > kMaxFlowRate || !std::isfinite(r)) {
        return Bad("out_of_range", "rate_per_s",
                   "rate_per_s must be above 0 and at most 1000000 (attempts a second; 0.5 is "
                   "one every 2 s); null for no limit");
      }
      s.rate_per_s = r;
    }
  }
  auto burst = Integer(obj, "burst", 1, kMaxFlowBurst, std::nullopt);
  if (!burst.ok()) return burst.status();
  s.burst = *burst;
  auto in_flight = Integer(obj, "max_in_flight", 1, kMaxFlowInFlight, kNoCap);
  if (!in_flight.ok()) return in_flight.status();
  s.max_in_flight = *in_flight;
  if (const json::value* paused = obj.if_contains("paused")) {
    if (!paused->is_bool()) {
      return Bad("invalid_type", "paused",
                 std::string("paused must be true or false, not ") + KindName(*paused));
    }
    s.paused = paused->as_bool();
  }
  return s;
}

json::object FlowSettingsJson(const FlowSettings& s) {
  json::object out;
  if (s.rate_per_s) {
    if (*s.rate_per_s == kNoRateLimit) {
      out["rate_per_s"] = nullptr;
    } else if (*s.rate_per_s == std::floor(*s.rate_per_s)) {
      out["rate_per_s"] = static_cast<std::int64_t>(*s.rate_per_s);  // 200, not 2E2
    } else {
      out["rate_per_s"] = *s.rate_per_s;
    }
  }
  if (s.burst) out["burst"] = *s.burst;
  if (s.max_in_flight) {
    if (*s.max_in_flight == kNoCap) {
      out["max_in_flight"] = nullptr;
    } else {
      out["max_in_flight"] = *s.max_in_flight;
    }
  }
  out["paused"] = s.paused;
  return out;
}

std::string EncodeFlowSettings(const FlowSettings& s) {
  json::object o = FlowSettingsJson(s);
  o["updated_ms"] = s.updated_ms;
  return json::serialize(o);
}

Result<FlowSettings> DecodeFlowSettings(std::string_view key, std::string_view bytes) {
  boost::system::error_code ec;
  json::value v = json::parse(bytes, ec);
  if (ec || !v.is_object()) {
    return Status::Corrupt("the stored settings of flow \"" + std::string(key) +
                           "\" are not JSON; PUT them again");
  }
  std::int64_t updated = 0;
  if (const json::value* u = v.as_object().if_contains("updated_ms"); u && u->is_int64()) {
    updated = u->as_int64();
  }
  v.as_object().erase("updated_ms");
  Result<FlowSettings> s = ParseFlowSettings(v);
  if (!s.ok()) {
    return Status::Corrupt("the stored settings of flow \"" + std::string(key) +
                           "\" cannot be read (" + s.status().message() + "); PUT them again");
  }
  s->updated_ms = updated;
  return s;
}

}  // namespace tickwheel::server
