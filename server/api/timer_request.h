// Parsing and validating the API's request bodies and path parameters.
#ifndef TICKWHEEL_SERVER_API_TIMER_REQUEST_H_
#define TICKWHEEL_SERVER_API_TIMER_REQUEST_H_

#include <boost/json/value.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/api_error.h"

namespace tickwheel::server {

struct ApiLimits {
  std::int64_t horizon_ms = 10LL * 365 * 24 * 3600 * 1000;  // 10 years
  std::size_t payload_limit = 64 * 1024;   // serialized payload bytes
  std::size_t max_batch = 10'000;          // timers per batch request
  std::uint32_t default_max_attempts = 10;
  std::uint32_t default_backoff_ms = 1000;
  bool nats_enabled = false;  // the server was started with --nats
};

// Targets are stored as a string: the webhook URL, or kNatsPrefix + subject.
inline constexpr std::string_view kNatsPrefix = "nats:";

inline constexpr std::size_t kMaxIdLength = 128;

// A validated create request.
struct TimerSpec {
  std::optional<std::string> id;
  std::int64_t fire_at_ms = 0;  // absolute; past times were clamped to now
  std::string url;                // the target (see kNatsPrefix)
  std::string payload = "null";  // serialized JSON
  std::uint32_t max_attempts = 1;
  std::uint32_t backoff_ms = 0;
  std::uint64_t request_hash = 0;  // of the body, for idempotent creates
};

// Ids: 1..128 characters of [A-Za-z0-9._~-]. `field` names it in errors.
std::optional<ApiError> ValidateId(std::string_view id, std::string_view field);

// Parses a request body; on failure a 400 "invalid_json" naming the offset.
ApiResult<boost::json::value> ParseJsonBody(std::string_view body);

// One timer of POST /v1/timers or of a batch; `field` prefixes field names
// in errors ("" or "timers[3]."). `now_ms` is the wall clock at receipt.
ApiResult<TimerSpec> ParseTimerSpec(const boost::json::value& body,
                                    const ApiLimits& limits,
                                    std::int64_t now_ms,
                                    std::string_view field = "");

// The body of POST /v1/timers:batch: {"timers": [ ... ]}.
ApiResult<std::vector<TimerSpec>> ParseBatch(const boost::json::value& body,
                                             const ApiLimits& limits,
                                             std::int64_t now_ms);

// A JetStream subject to publish to: tokens of printable characters
// separated by '.', no wildcards, at most 256 characters. nullopt if valid.
std::optional<std::string> NatsSubjectError(std::string_view subject);

// The body of PATCH /v1/timers/{id}: the new absolute fire time.
ApiResult<std::int64_t> ParseReschedule(const boost::json::value& body,
                                        const ApiLimits& limits,
                                        std::int64_t now_ms);

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_API_TIMER_REQUEST_H_
