// SPDX-License-Identifier: Apache-2.0
// FlowSettings: what `PUT /v1/flows/{key}` sets for a flow, as the stores
// keep it, and the limits it comes to with the server's defaults.
#ifndef TICKWHEEL_SERVER_FLOW_FLOW_SETTINGS_H_
#define TICKWHEEL_SERVER_FLOW_FLOW_SETTINGS_H_

#include <boost/json/value.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "flow/flow_limits.h"

namespace tickwheel::server {

// Each limit is absent (the server's default: --flow-default-rate,
// --flow-default-max-in-flight), or given: a number, or no limit (JSON
// null, kNoRateLimit / kNoCap here) whatever the default.
struct FlowSettings {
  std::optional<double> rate_per_s;
  std::optional<std::int64_t> burst;  // absent: DefaultBurst(rate)
  std::optional<std::int64_t> max_in_flight;
  bool paused = false;
  std::int64_t updated_ms = 0;  // when it was last set (Unix ms)

  friend bool operator==(const FlowSettings&, const FlowSettings&) = default;
};

// The server's flags (0 or absent: no limit).
struct FlowDefaults {
  double rate_per_s = kNoRateLimit;
  std::int64_t max_in_flight = kNoCap;
};

inline constexpr double kMaxFlowRate = 1'000'000;
inline constexpr std::int64_t kMaxFlowBurst = 1'000'000;
inline constexpr std::int64_t kMaxFlowInFlight = 1'000'000;

// The limits of a flow with `settings` (nullptr: none stored) on a server
// with `defaults`. A burst without a rate (none given, no default) is moot.
FlowLimits ResolveLimits(const FlowSettings* settings, const FlowDefaults& defaults);

// The body of PUT /v1/flows/{key}: {"rate_per_s": number > 0 or null,
// "burst": integer >= 1, "max_in_flight": integer >= 1 or null, "paused":
// bool}, each optional. kInvalidArgument naming the field otherwise.
Result<FlowSettings> ParseFlowSettings(const boost::json::value& body);

// The settings as the API shows them: those given (null for "no limit"),
// "paused" always.
boost::json::object FlowSettingsJson(const FlowSettings& settings);

// The stored form: the API's JSON with "updated_ms". DecodeFlowSettings
// fails with kCorrupt for bytes that are not that.
std::string EncodeFlowSettings(const FlowSettings& settings);
Result<FlowSettings> DecodeFlowSettings(std::string_view key, std::string_view bytes);

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_FLOW_FLOW_SETTINGS_H_
