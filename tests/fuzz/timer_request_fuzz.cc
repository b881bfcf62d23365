// SPDX-License-Identifier: Apache-2.0
// Fuzzes the API's request decoding (server/api/timer_request.h): JSON
// bodies of create, batch and reschedule, ids and NATS subjects, under
// limits and a receipt time decoded from the input.
//
// Oracle, both ways: a body is accepted exactly when it is valid, as decided
// here from the JSON alone (Invalid*: written again from docs/server.md, not
// calling the validators under test), and what is accepted is what was
// given. Every refusal is a well-formed error (CheckError: a known reason, a
// message, 400/413, a body that is valid JSON). Valid means:
// - only known fields, at every level; ids 1..128 of [A-Za-z0-9._~-];
// - exactly one of delay_ms (0..horizon) or fire_at_ms (0..now + horizon),
//   each an integer (int64);
// - a target object with exactly one of url (a string of <= 2048 bytes that
//   ParseHttpUrl accepts, https only when enabled; headers only here: an
//   object of at most 16 strings, 8 KiB of names and values in all, names
//   RFC 9110 tokens given once (any case), none reserved, values without
//   control characters but tab) or nats (a string; only when enabled; a
//   publishable subject);
// - flow, if given, a string of 1..260 printable ASCII characters other
//   than space, / ? # % " and \, not ending in :pause or :resume;
// - retry, if given, an object of max_attempts (1..100) and backoff_ms
//   (1..86400000), both optional integers;
// - a payload whose numbers are finite and whose serialization fits the
//   limit;
// - batches: {"timers": [...]} of 1..max_batch valid timers, ids unique;
//   reschedules: an object of exactly one of delay_ms and fire_at_ms.
// Taken as given: the id; fire = now + delay_ms, or max(fire_at_ms, now);
// the flow, else the target's default flow (a valid flow key);
// the URL (its parts re-assembled parse to the same parts) or the NATS
// subject; the headers in order; max_attempts and backoff_ms as given, the
// server's defaults where absent; the payload re-parsing to the value given
// (null when absent).
#include <boost/json.hpp>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

#include "api/json_body.h"
#include "api/timer_request.h"
#include "decoder_checks.h"
#include "timer/flow_key.h"
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

// --- What is valid, from the JSON alone: each Invalid* says why not, or "".

std::string UnknownField(const json::object& o, std::initializer_list<std::string_view> known,
                         const std::string& where) {
  for (const auto& kv : o) {
    bool ok = false;
    for (std::string_view k : known) ok = ok || kv.key() == k;
    if (!ok) return "unknown field \"" + std::string(kv.key()) + "\" in " + where;
  }
  return "";
}

// An integer field is an int64 when present.
std::string NotAnInteger(const json::object& o, std::string_view key, const std::string& where) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || v->is_int64()) return "";
  return where + "." + std::string(key) + " is not an int64: " + json::serialize(*v);
}

std::string InvalidFireTime(const json::object& o, const ApiLimits& limits, std::int64_t now_ms,
                            const std::string& where) {
  for (std::string_view key : {"delay_ms", "fire_at_ms"}) {
    if (std::string why = NotAnInteger(o, key, where); !why.empty()) return why;
  }
  const json::value* delay = o.if_contains("delay_ms");
  const json::value* at = o.if_contains("fire_at_ms");
  if ((delay == nullptr) == (at == nullptr)) {
    return where + ": not exactly one of delay_ms and fire_at_ms";
  }
  if (delay != nullptr) {
    const std::int64_t d = delay->as_int64();
    if (d < 0 || d > limits.horizon_ms) return where + ": delay_ms " + std::to_string(d);
  } else {
    const std::int64_t a = at->as_int64();
    if (a < 0 || a > now_ms + limits.horizon_ms) return where + ": fire_at_ms " + std::to_string(a);
  }
  return "";
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
std::string InvalidHeaders(const json::value& given, const std::string& where) {
  static constexpr std::string_view kReserved[] = {
      "connection", "keep-alive", "proxy-connection", "transfer-encoding", "te",
      "trailer", "upgrade", "content-length", "host", "content-type",
      "idempotency-key", "webhook-id", "webhook-timestamp", "webhook-signature"};
  if (!given.is_object()) return where + ": headers that are not an object";
  const json::object& headers = given.as_object();
  if (headers.size() > 16) return where + ": " + std::to_string(headers.size()) + " headers";
  std::set<std::string> seen;
  std::size_t bytes = 0;
  for (const auto& [name, value] : headers) {
    if (!IsToken(name)) return where + ": header name \"" + std::string(name) + "\"";
    for (std::string_view r : kReserved) {
      if (Lower(name) == r) return where + ": reserved header " + std::string(name);
    }
    if (!seen.insert(Lower(name)).second) return where + ": header " + std::string(name) + " twice";
    if (!value.is_string()) return where + ": header " + std::string(name) + " not a string";
    for (char c : value.as_string()) {
      const auto u = static_cast<unsigned char>(c);
      if ((u < 0x20 && c != '\t') || u == 0x7f) {
        return where + ": a control character in header " + std::string(name);
      }
    }
    bytes += name.size() + value.as_string().size();
  }
  if (bytes > 8 * 1024) return where + ": headers over 8 KiB";
  return "";
}

std::string InvalidTarget(const json::value* target, const ApiLimits& limits,
                          const std::string& where) {
  if (target == nullptr || !target->is_object()) return where + ": no target object";
  const json::object& t = target->as_object();
  if (std::string why = UnknownField(t, {"url", "nats", "headers"}, where + ".target");
      !why.empty()) {
    return why;
  }
  if (t.contains("url") == t.contains("nats")) return where + ": not exactly one of url and nats";
  if (const json::value* nats = t.if_contains("nats")) {
    if (!nats->is_string()) return where + ": a nats that is not a string";
    if (!limits.nats_enabled) return where + ": a NATS target without --nats";
    if (t.contains("headers")) return where + ": headers for a NATS target";
    if (!IsValidSubject(nats->as_string())) return where + ": an invalid NATS subject";
    return "";
  }
  const json::value& url = t.at("url");
  if (!url.is_string()) return where + ": a url that is not a string";
  if (url.as_string().size() > 2048) return where + ": a URL over 2048 bytes";
  const auto parsed = server::ParseHttpUrl(url.as_string());
  if (!parsed.ok()) return where + ": a URL that does not parse";
  if (parsed->tls && !limits.https_enabled) return where + ": https without TLS";
  if (const json::value* headers = t.if_contains("headers")) {
    return InvalidHeaders(*headers, where + ".target.headers");
  }
  return "";
}

std::string InvalidRetry(const json::value* retry, const std::string& where) {
  if (retry == nullptr) return "";
  if (!retry->is_object()) return where + ": a retry that is not an object";
  const json::object& r = retry->as_object();
  if (std::string why = UnknownField(r, {"max_attempts", "backoff_ms"}, where + ".retry");
      !why.empty()) {
    return why;
  }
  for (std::string_view key : {"max_attempts", "backoff_ms"}) {
    if (std::string why = NotAnInteger(r, key, where + ".retry"); !why.empty()) return why;
  }
  if (const json::value* a = r.if_contains("max_attempts")) {
    if (a->as_int64() < 1 || a->as_int64() > 100) return where + ": max_attempts " + json::serialize(*a);
  }
  if (const json::value* b = r.if_contains("backoff_ms")) {
    if (b->as_int64() < 1 || b->as_int64() > 86'400'000) {
      return where + ": backoff_ms " + json::serialize(*b);
    }
  }
  return "";
}

// A flow key (docs/flows.md).
bool IsValidFlow(std::string_view key) {
  if (key.empty() || key.size() > 260) return false;
  for (char c : key) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f || std::string_view("/?#%\"\\").find(c) != std::string_view::npos) {
      return false;
    }
  }
  for (std::string_view action : {":pause", ":resume"}) {
    if (key.size() >= action.size() && key.substr(key.size() - action.size()) == action) {
      return false;
    }
  }
  return true;
}

bool AllFinite(const json::value& v) {
  if (v.is_double()) return std::isfinite(v.as_double());
  if (v.is_array()) {
    for (const json::value& e : v.as_array()) {
      if (!AllFinite(e)) return false;
    }
  }
  if (v.is_object()) {
    for (const auto& kv : v.as_object()) {
      if (!AllFinite(kv.value())) return false;
    }
  }
  return true;
}

std::string InvalidTimer(const json::value& body, const ApiLimits& limits, std::int64_t now_ms,
                         const std::string& where) {
  if (!body.is_object()) return where + ": not an object";
  const json::object& o = body.as_object();
  if (std::string why =
          UnknownField(o, {"id", "delay_ms", "fire_at_ms", "payload", "target", "retry", "flow"},
                       where);
      !why.empty()) {
    return why;
  }
  if (const json::value* flow = o.if_contains("flow")) {
    if (!flow->is_string() || !IsValidFlow(flow->as_string())) return where + ": an invalid flow";
  }
  if (const json::value* id = o.if_contains("id")) {
    if (!id->is_string() || !IsValidId(id->as_string())) return where + ": an invalid id";
  }
  if (std::string why = InvalidFireTime(o, limits, now_ms, where); !why.empty()) return why;
  if (std::string why = InvalidTarget(o.if_contains("target"), limits, where); !why.empty()) {
    return why;
  }
  if (std::string why = InvalidRetry(o.if_contains("retry"), where); !why.empty()) return why;
  if (const json::value* payload = o.if_contains("payload")) {
    if (!AllFinite(*payload)) return where + ": a payload number beyond a double";
    if (json::serialize(*payload).size() > limits.payload_limit) {
      return where + ": a payload over the limit";
    }
  }
  return "";
}

std::string InvalidBatch(const json::value& body, const ApiLimits& limits, std::int64_t now_ms) {
  if (!body.is_object()) return "a batch that is not an object";
  const json::object& o = body.as_object();
  if (std::string why = UnknownField(o, {"timers"}, "batch"); !why.empty()) return why;
  const json::value* timers = o.if_contains("timers");
  if (timers == nullptr || !timers->is_array()) return "a batch without a timers array";
  const json::array& arr = timers->as_array();
  if (arr.empty() || arr.size() > limits.max_batch) {
    return "a batch of " + std::to_string(arr.size());
  }
  std::set<std::string> ids;
  for (std::size_t i = 0; i < arr.size(); ++i) {
    const std::string where = "timers[" + std::to_string(i) + "]";
    if (std::string why = InvalidTimer(arr[i], limits, now_ms, where); !why.empty()) return why;
    if (const json::value* id = arr[i].as_object().if_contains("id")) {
      if (!ids.insert(std::string(id->as_string())).second) return where + ": a duplicate id";
    }
  }
  return "";
}

std::string InvalidReschedule(const json::value& body, const ApiLimits& limits,
                              std::int64_t now_ms) {
  if (!body.is_object()) return "a reschedule that is not an object";
  if (std::string why = UnknownField(body.as_object(), {"delay_ms", "fire_at_ms"}, "reschedule");
      !why.empty()) {
    return why;
  }
  return InvalidFireTime(body.as_object(), limits, now_ms, "reschedule");
}

// --- What was accepted is what was given.

std::int64_t FireTime(const json::object& o, std::int64_t now_ms) {
  if (const json::value* delay = o.if_contains("delay_ms")) return now_ms + delay->as_int64();
  return std::max(o.at("fire_at_ms").as_int64(), now_ms);
}

// A target URL the server accepted: its parts re-assembled parse to the same
// parts (what the webhook client will connect to).
void CheckUrlParts(std::string_view url, const std::string& where) {
  const auto parsed = server::ParseHttpUrl(url);
  const std::string again =
      (parsed->tls ? "https://" : "http://") + parsed->HostHeader() + parsed->target;
  const auto reparsed = server::ParseHttpUrl(again);
  Require(reparsed.ok() && reparsed->tls == parsed->tls && reparsed->host == parsed->host &&
              reparsed->port == parsed->port && reparsed->target == parsed->target,
          where + ": URL parts do not re-parse to themselves: " + again);
}

// `body` is valid (InvalidTimer said so).
void CheckTaken(const json::value& body, const TimerSpec& spec, const ApiLimits& limits,
                std::int64_t now_ms, const std::string& where) {
  const json::object& o = body.as_object();
  if (const json::value* id = o.if_contains("id")) {
    Require(spec.id && *spec.id == id->as_string(), where + ": id not taken as given");
  } else {
    Require(!spec.id, where + ": an id appeared from nowhere");
  }
  Require(spec.fire_at_ms == FireTime(o, now_ms),
          where + ": fire time " + std::to_string(spec.fire_at_ms) +
              " is not now + delay_ms or max(fire_at_ms, now)");

  if (const json::value* flow = o.if_contains("flow")) {
    Require(spec.flow == flow->as_string(), where + ": flow not taken as given");
  } else {
    Require(spec.flow == server::DefaultFlowKey(spec.target) && IsValidFlow(spec.flow),
            where + ": flow \"" + spec.flow + "\" is not the target's default flow");
  }

  const json::object& t = o.at("target").as_object();
  if (const json::value* nats = t.if_contains("nats")) {
    Require(spec.target == std::string(server::kNatsPrefix) + std::string(nats->as_string()),
            where + ": NATS target stored wrongly");
    Require(spec.headers.empty(), where + ": headers for a NATS target");
  } else {
    Require(spec.target == t.at("url").as_string(), where + ": url not taken as given");
    CheckUrlParts(spec.target, where);
    const json::value* headers = t.if_contains("headers");
    const std::size_t given = headers ? headers->as_object().size() : 0;
    Require(spec.headers.size() == given, where + ": " + std::to_string(spec.headers.size()) +
                                              " headers stored, " + std::to_string(given) +
                                              " given");
    for (std::size_t i = 0; i < given; ++i) {
      const auto& [name, value] = *(headers->as_object().begin() + static_cast<std::ptrdiff_t>(i));
      Require(spec.headers[i].first == name && spec.headers[i].second == value.as_string(),
              where + ": header " + std::string(name) + " not as given, in order");
    }
  }

  const json::value* retry = o.if_contains("retry");
  const json::value* attempts = retry ? retry->as_object().if_contains("max_attempts") : nullptr;
  const json::value* backoff = retry ? retry->as_object().if_contains("backoff_ms") : nullptr;
  Require(spec.max_attempts == (attempts ? attempts->as_int64() : limits.default_max_attempts),
          where + ": max_attempts " + std::to_string(spec.max_attempts) +
              " is not the one given (or the default)");
  Require(spec.backoff_ms == (backoff ? backoff->as_int64() : limits.default_backoff_ms),
          where + ": backoff_ms " + std::to_string(spec.backoff_ms) +
              " is not the one given (or the default)");

  // An absent payload is stored as null.
  const json::value* given = o.if_contains("payload");
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
  // Refused exactly when invalid; each refusal a well-formed error.
  auto judge = [&](const server::Status& status, const std::string& why, const char* what) {
    if (!status.ok()) {
      CheckError(status, what);
      Require(!why.empty(), std::string(what) + " refused a valid request: " + status.message());
    } else {
      Require(why.empty(), std::string(what) + " accepted: " + why);
    }
  };
  if (mode == 0) {
    auto spec = server::ParseTimerSpec(body, limits, now_ms);
    judge(spec.status(), InvalidTimer(body, limits, now_ms, "timer"), "ParseTimerSpec");
    if (spec.ok()) CheckTaken(body, *spec, limits, now_ms, "timer");
  } else if (mode == 1) {
    auto batch = server::ParseBatch(body, limits, now_ms);
    judge(batch.status(), InvalidBatch(body, limits, now_ms), "ParseBatch");
    if (!batch.ok()) return;
    const json::array& timers = body.as_object().at("timers").as_array();
    Require(batch->size() == timers.size(), "batch of " + std::to_string(timers.size()) +
                                                " gave " + std::to_string(batch->size()));
    for (std::size_t i = 0; i < timers.size(); ++i) {
      CheckTaken(timers[i], (*batch)[i], limits, now_ms, "timers[" + std::to_string(i) + "]");
    }
  } else {
    auto at = server::ParseReschedule(body, limits, now_ms);
    judge(at.status(), InvalidReschedule(body, limits, now_ms), "ParseReschedule");
    if (at.ok()) {
      Require(*at == FireTime(body.as_object(), now_ms),
              "reschedule: fire time is not now + delay_ms or max(fire_at_ms, now)");
    }
  }
}

}  // namespace
}  // namespace tickwheel::testing

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  tickwheel::testing::FuzzOne(
      std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
