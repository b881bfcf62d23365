// SPDX-License-Identifier: Apache-2.0
// Parsing and validating the API's request bodies and path parameters.
#ifndef TICKWHEEL_SERVER_API_TIMER_REQUEST_H_
#define TICKWHEEL_SERVER_API_TIMER_REQUEST_H_

#include <boost/json/value.hpp>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "timer/timer_record.h"
#include "timer/timer_state_machine.h"

namespace tickwheel::server {

struct ApiLimits {
  std::int64_t horizon_ms = 10LL * 365 * 24 * 3600 * 1000;  // 10 years
  std::size_t payload_limit = 64 * 1024;   // serialized payload bytes
  std::size_t max_batch = 10'000;          // timers per batch request
  std::uint32_t default_max_attempts = 10;
  std::uint32_t default_backoff_ms = 1000;
  bool nats_enabled = false;  // the server was started with --nats
  bool https_enabled = false;  // the webhook client can make TLS connections
};

inline constexpr std::size_t kMaxIdLength = 128;
inline constexpr std::size_t kMaxTargetHeaders = 16;
inline constexpr std::size_t kMaxTargetHeaderBytes = 8 * 1024;  // names and values

// Ids: 1..128 characters of [A-Za-z0-9._~-]. `field` names it in errors.
Status ValidateId(std::string_view id, std::string_view field);
// A timer's id in a path: a client's id, or a schedule's occurrence
// ("<schedule id>@<time>": timer/occurrence_id.h).
Status ValidateTimerPathId(std::string_view id);

// " (did you mean \"delay_ms\"?)" when `key` is within a small edit
// distance of one of `known` (a typo such as "dealy_ms"); "" otherwise.
std::string SuggestField(std::string_view key, std::initializer_list<std::string_view> known);

// What a timer (or each occurrence of a schedule) delivers: "target" (with
// its headers; required unless !target_required), "retry" and "payload" of
// `obj`, into `spec`; `prefix` prefixes field names in errors.
Status ParseDelivery(const boost::json::object& obj, const ApiLimits& limits,
                     std::string_view prefix, TimerSpec& spec, bool target_required = true);

// Field helpers for request bodies. KindName: "an integer", "a string"...
// CheckFields: kInvalidArgument "unknown_field" (with a suggestion) for a
// key of `obj` not in `known`. Integer: an integer field (nullopt if
// absent); refuses fractions and non-numbers.
using KnownFields = std::initializer_list<std::string_view>;
const char* KindName(const boost::json::value& v);
Status CheckFields(const boost::json::object& obj, KnownFields known, std::string_view prefix);
Result<std::optional<std::int64_t>> Integer(const boost::json::object& obj, std::string_view key,
                                            std::string_view prefix);

// One timer of POST /v1/timers or of a batch; `prefix` prefixes field names
// in errors ("" or "timers[3]."). `now_ms` is the wall clock at receipt. The
// spec's digest is the SHA-256 of the timer's canonical JSON, so a repeated
// create matches whatever its key order and spacing.
Result<TimerSpec> ParseTimerSpec(const boost::json::value& body, const ApiLimits& limits,
                                 std::int64_t now_ms, std::string_view prefix = "");

// The body of POST /v1/timers:batch: {"timers": [ ... ]}; ids unique.
Result<std::vector<TimerSpec>> ParseBatch(const boost::json::value& body,
                                          const ApiLimits& limits, std::int64_t now_ms);

// The body of PATCH /v1/timers/{id}: the new absolute fire time.
Result<std::int64_t> ParseReschedule(const boost::json::value& body, const ApiLimits& limits,
                                     std::int64_t now_ms);

// A create of `spec` for an `existing` timer with its id is a repeat of the
// request that made it (answered 200) rather than a different one (409).
bool SameCreate(const TimerRecord& existing, const TimerSpec& spec);

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_API_TIMER_REQUEST_H_
