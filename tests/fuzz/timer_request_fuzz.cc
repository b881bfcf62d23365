// SPDX-License-Identifier: Apache-2.0
// Fuzzes the API's request decoding (server/api/timer_request.h): JSON
// bodies of create, batch and reschedule, ids and NATS subjects, under
// limits and a receipt time decoded from the input.
//
// Oracle: every input gives either a value or an error Status (CheckError:
// a known reason, a message, 400/413, a body that is valid JSON), and whatever
// is accepted satisfies the documented constraints, checked here against
// the JSON itself rather than by calling the validators again:
// - only known fields, at every level; ids 1..128 of [A-Za-z0-9._~-];
// - exactly one of delay_ms (0..horizon; fire = now + delay) or fire_at_ms
//   (0..now + horizon; fire = max(at, now)); so now <= fire <= now + horizon;
// - a target with exactly one of url (<= 2048 bytes; ParseHttpUrl accepts
//   it, https only when enabled, and its parts re-assemble to a URL that
//   parses to the same parts; headers only here: at most 16, 8 KiB in all,
//   token names given once, none reserved, values without controls) or nats
//   (only when enabled; a publishable subject);
// - retry within 1..100 attempts and 1..86400000 ms, or the defaults;
// - the payload serialized within the limit and re-parsing to the same
//   value;
// - batches: 1..max_batch timers, each as above, ids unique.
#include <boost/json.hpp>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

#include "api/json_body.h"
#include "api/timer_request.h"
#include "decoder_checks.h"
#include "timer/http_url.h"
#include "timer/target.h"

namespace tickwheel::testing {
namespace {

namespace json = boost::json;
using server::ApiLimits;
using server::TimerSpec;

void Require(bool ok, const std::string& what) {
  if (!ok) FuzzFail(what);
}

// An integer field as the API reads it: int64 only.
std::optional<std::int64_t> Int(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr) return std::nullopt;
  Require(v->is_int64(), "accepted " + std::string(key) + " that is not an int64: " +
                             json::serialize(*v));
  return v->as_int64();
}

// Equal JSON values, except that doubles may differ in the last bits:
// Boost.JSON's default number parsing is not correctly rounded, so a
// serialized double may re-parse a few ulps away.
bool SameJson(const json::value& a, const json::value& b) {
  if (a.is_double() && b.is_double()) {
    const double x = a.as_double(), y = b.as_double();
    return x == y || std::fabs(x - y) <= 1e-14 * std::max(std::fabs(x), std::fabs(y));
  }
  if (a.kind() != b.kind()) return false;
  if (a.is_array()) {
    const json::array &x = a.as_array(), &y = b.as_array();
    if (x.size() != y.size()) return false;
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (!SameJson(x[i], y[i])) return false;
    }
    return true;
  }
  if (a.is_object()) {
    const json::object &x = a.as_object(), &y = b.as_object();
    if (x.size() != y.size()) return false;
    for (const auto& kv : x) {
      const json::value* other = y.if_contains(kv.key());
      if (other == nullptr || !SameJson(kv.value(), *other)) return false;
    }
    return true;
  }
  return a == b;
}

void OnlyFields(const json::object& o, std::initializer_list<std::string_view> known,
                const std::string& where) {
  for (const auto& kv : o) {
    bool ok = false;
    for (std::string_view k : known) ok = ok || kv.key() == k;
    Require(ok, "accepted unknown field \"" + std::string(kv.key()) + "\" in " + where);
  }
}

void CheckFireTime(const json::object& o, std::int64_t fire, const ApiLimits& limits,
                   std::int64_t now_ms, const std::string& where) {
  const auto delay = Int(o, "delay_ms");
  const auto at = Int(o, "fire_at_ms");
  Require(delay.has_value() != at.has_value(),
          where + ": accepted without exactly one of delay_ms and fire_at_ms");
  if (delay) {
    Require(*delay >= 0 && *delay <= limits.horizon_ms,
            where + ": accepted delay_ms " + std::to_string(*delay));
    Require(fire == now_ms + *delay, where + ": fire time is not now + delay_ms");
  } else {
    Require(*at >= 0 && *at <= now_ms + limits.horizon_ms,
            where + ": accepted fire_at_ms " + std::to_string(*at));
    Require(fire == std::max(*at, now_ms), where + ": fire time is not max(fire_at_ms, now)");
  }
  Require(fire >= now_ms && fire <= now_ms + limits.horizon_ms,
          where + ": fire time outside [now, now + horizon]");
}

// A target URL the server accepted: it parses, and its parts re-assembled
// parse to the same parts (what the webhook client will connect to).
void CheckUrl(std::string_view url, bool https_enabled, const std::string& where) {
  Require(url.size() <= 2048, where + ": accepted a URL over 2048 bytes");
  const auto parsed = server::ParseHttpUrl(url);
  Require(parsed.ok(), where + ": stored a URL that does not parse");
  Require(!parsed->tls || https_enabled, where + ": accepted https without TLS");
  const std::string again =
      (parsed->tls ? "https://" : "http://") + parsed->HostHeader() + parsed->target;
  const auto reparsed = server::ParseHttpUrl(again);
  Require(reparsed.ok() && reparsed->tls == parsed->tls && reparsed->host == parsed->host &&
              reparsed->port == parsed->port && reparsed->target == parsed->target,
          where + ": URL parts do not re-parse to themselves: " + again);
}

bool IsToken(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
    if (!ok) return false;
  }
  return true;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// Headers a target may set (docs/server.md): not hop-by-hop, framing, or
// set by the server on every attempt.
void CheckHeaders(const json::object& given, const TimerSpec& spec, const std::string& where) {
  static constexpr std::string_view kReserved[] = {
      "connection", "keep-alive", "proxy-connection", "transfer-encoding", "te",
      "trailer", "upgrade", "content-length", "host", "content-type",
      "idempotency-key", "webhook-id", "webhook-timestamp", "webhook-signature"};
  Require(given.size() <= 16 && spec.headers.size() == given.size(),
          where + ": accepted " + std::to_string(given.size()) + " headers");
  std::set<std::string> seen;
  std::size_t bytes = 0;
  for (const auto& [name, value] : spec.headers) {
    const json::value* v = given.if_contains(name);
    Require(v && v->is_string() && v->as_string() == value, where + ": header not as given");
    Require(IsToken(name), where + ": accepted header name \"" + name + "\"");
    for (std::string_view r : kReserved) {
      Require(Lower(name) != r, where + ": accepted reserved header " + name);
    }
    Require(seen.insert(Lower(name)).second, where + ": accepted header " + name + " twice");
    for (char c : value) {
      const auto u = static_cast<unsigned char>(c);
      Require((u >= 0x20 || c == '\t') && u != 0x7f,
              where + ": accepted a control character in header " + name);
    }
    bytes += name.size() + value.size();
  }
  Require(bytes <= 8 * 1024, where + ": accepted headers over 8 KiB");
}

void CheckSpec(const json::value& body, const TimerSpec& spec, const ApiLimits& limits,
               std::int64_t now_ms, const std::string& where) {
  Require(body.is_object(), where + ": accepted a timer that is not an object");
  const json::object& o = body.as_object();
  OnlyFields(o, {"id", "delay_ms", "fire_at_ms", "payload", "target", "retry"}, where);
  if (const json::value* id = o.if_contains("id")) {
    Require(id->is_string() && spec.id && *spec.id == id->as_string(),
            where + ": id not taken as given");
    Require(IsValidId(*spec.id), where + ": accepted invalid id \"" + *spec.id + "\"");
  } else {
    Require(!spec.id, where + ": an id appeared from nowhere");
  }
  CheckFireTime(o, spec.fire_at_ms, limits, now_ms, where);

  const json::value* target = o.if_contains("target");
  Require(target && target->is_object(), where + ": accepted without a target object");
  const json::object& t = target->as_object();
  OnlyFields(t, {"url", "nats", "headers"}, where + ".target");
  Require(t.contains("url") != t.contains("nats"),
          where + ": accepted a target without exactly one of url and nats");
  if (const json::value* nats = t.if_contains("nats")) {
    Require(limits.nats_enabled, where + ": accepted a NATS target without --nats");
    Require(nats->is_string() && IsValidSubject(nats->as_string()),
            where + ": accepted an invalid NATS subject");
    Require(spec.target == std::string(server::kNatsPrefix) + std::string(nats->as_string()),
            where + ": NATS target stored wrongly");
    Require(!t.contains("headers") && spec.headers.empty(),
            where + ": accepted headers for a NATS target");
  } else {
    const json::value& url = t.at("url");
    Require(url.is_string() && spec.target == url.as_string(),
            where + ": url not taken as given");
    CheckUrl(spec.target, limits.https_enabled, where);
    if (const json::value* headers = t.if_contains("headers")) {
      Require(headers->is_object(), where + ": accepted headers that are not an object");
      CheckHeaders(headers->as_object(), spec, where);
    } else {
      Require(spec.headers.empty(), where + ": headers from nowhere");
    }
  }

  if (const json::value* retry = o.if_contains("retry")) {
    Require(retry->is_object(), where + ": accepted a retry that is not an object");
    OnlyFields(retry->as_object(), {"max_attempts", "backoff_ms"}, where + ".retry");
  }
  Require(spec.max_attempts >= 1 && spec.max_attempts <= 100,
          where + ": max_attempts " + std::to_string(spec.max_attempts));
  Require(spec.backoff_ms >= 1 && spec.backoff_ms <= 86'400'000,
          where + ": backoff_ms " + std::to_string(spec.backoff_ms));

  // The limit is on the payload given; an absent one is stored as null.
  const json::value* given = o.if_contains("payload");
  Require(!given || spec.payload.size() <= limits.payload_limit,
          where + ": accepted a payload over the limit");
  boost::system::error_code ec;
  const json::value payload = json::parse(spec.payload, ec);
  Require(!ec, where + ": stored a payload that is not JSON: " + spec.payload);
  Require(SameJson(payload, given ? *given : json::value(nullptr)),
          where + ": stored payload differs from the one given: " + spec.payload);
}

// The input: an 8-byte header, then the text (a body, an id or a subject).
//   byte 0: what the text is: 'c' create, 'b' batch, 'r' reschedule, 'i' id,
//           's' subject (other values: modulo 5 in that order);
//   byte 1: flags: bits 0-1 horizon (10 years, 0, 1 s, from the raw value),
//           bits 2-3 payload limit (64 KiB, 1, 16, from the raw value),
//           bit 4 max_batch 3 (else 10,000), bit 5 NATS enabled,
//           bit 6 receipt time from the raw value (else 1.7e12 ms),
//           bit 7 https enabled;
//   bytes 2-7: a raw little-endian value for the choices above.
struct Header {
  int mode = 0;
  ApiLimits limits;
  std::int64_t now_ms = 1'700'000'000'000;
};

Header DecodeHeader(std::string_view in) {
  unsigned char b[8] = {};
  for (std::size_t i = 0; i < 8 && i < in.size(); ++i) b[i] = static_cast<unsigned char>(in[i]);
  Header h;
  const std::string_view kModes = "cbris";
  const std::size_t m = kModes.find(static_cast<char>(b[0]));
  h.mode = static_cast<int>(m != std::string_view::npos ? m : b[0] % 5);
  std::int64_t raw = 0;
  for (int i = 7; i >= 2; --i) raw = (raw << 8) | b[i];
  // --horizon is a duration: at most 292 years.
  static constexpr std::int64_t kHorizons[] = {10LL * 365 * 24 * 3600 * 1000, 0, 1000,
                                               0};
  h.limits.horizon_ms = (b[1] & 3) == 3 ? raw % 9'223'372'036'854 : kHorizons[b[1] & 3];
  static constexpr std::size_t kPayloads[] = {64 * 1024, 1, 16, 0};
  h.limits.payload_limit = ((b[1] >> 2) & 3) == 3
                               ? 1 + static_cast<std::size_t>(raw % (64 << 20))
                               : kPayloads[(b[1] >> 2) & 3];
  h.limits.max_batch = (b[1] & 16) ? 3 : 10'000;
  h.limits.nats_enabled = (b[1] & 32) != 0;
  h.limits.https_enabled = (b[1] & 128) != 0;
  if (b[1] & 64) h.now_ms = raw % (std::int64_t{1} << 42);  // 1970 to 2109
  return h;
}

void FuzzOne(std::string_view input) {
  const Header header = DecodeHeader(input);
  const int mode = header.mode;
  const ApiLimits& limits = header.limits;
  const std::int64_t now_ms = header.now_ms;
  const std::string text(input.substr(std::min<std::size_t>(8, input.size())));

  if (mode == 3) {  // an id, as in /v1/timers/{id}
    const server::Status s = server::ValidateId(text, "id");
    Require(s.ok() == IsValidId(text), "ValidateId disagrees on \"" + text + "\"");
    if (!s.ok()) CheckError(s, "ValidateId");
    return;
  }
  if (mode == 4) {  // a NATS subject
    const server::Status s = server::CheckNatsSubject(text);
    Require(s.ok() == IsValidSubject(text), "CheckNatsSubject disagrees on \"" + text + "\"");
    if (!s.ok()) CheckError(s, "CheckNatsSubject");
    return;
  }
  auto parsed = server::ParseJsonBody(text);
  if (!parsed.ok()) return CheckError(parsed.status(), "ParseJsonBody");
  const json::value& body = *parsed;
  if (mode == 0) {
    auto spec = server::ParseTimerSpec(body, limits, now_ms);
    if (!spec.ok()) return CheckError(spec.status(), "ParseTimerSpec");
    CheckSpec(body, *spec, limits, now_ms, "timer");
  } else if (mode == 1) {
    auto batch = server::ParseBatch(body, limits, now_ms);
    if (!batch.ok()) return CheckError(batch.status(), "ParseBatch");
    const std::vector<TimerSpec>& specs = *batch;
    Require(body.is_object(), "accepted a batch that is not an object");
    OnlyFields(body.as_object(), {"timers"}, "batch");
    const json::array& timers = body.as_object().at("timers").as_array();
    Require(!specs.empty() && specs.size() <= limits.max_batch && specs.size() == timers.size(),
            "batch of " + std::to_string(specs.size()) + " accepted");
    std::set<std::string> ids;
    for (std::size_t i = 0; i < specs.size(); ++i) {
      const std::string where = "timers[" + std::to_string(i) + "]";
      CheckSpec(timers[i], specs[i], limits, now_ms, where);
      if (specs[i].id) Require(ids.insert(*specs[i].id).second, where + ": duplicate id accepted");
    }
  } else {
    auto at = server::ParseReschedule(body, limits, now_ms);
    if (!at.ok()) return CheckError(at.status(), "ParseReschedule");
    Require(body.is_object(), "accepted a reschedule that is not an object");
    OnlyFields(body.as_object(), {"delay_ms", "fire_at_ms"}, "reschedule");
    CheckFireTime(body.as_object(), *at, limits, now_ms, "reschedule");
  }
}

}  // namespace
}  // namespace tickwheel::testing

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  tickwheel::testing::FuzzOne(
      std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
