// SPDX-License-Identifier: Apache-2.0
// Request bodies as JSON: parsed with bounded memory, and their canonical
// form (for digests that ignore key order and spacing).
#ifndef TICKWHEEL_SERVER_API_JSON_BODY_H_
#define TICKWHEEL_SERVER_API_JSON_BODY_H_

#include <boost/json/value.hpp>
#include <string>
#include <string_view>

#include "common/status.h"

namespace tickwheel::server {

// The tree may use at most this many bytes per byte of body (plus 64 KiB):
// ordinary timers use 2-4; a body of tiny values ("[0,0,0,...]") would use
// 10-20 and is refused instead of being built.
inline constexpr std::size_t kJsonMemoryPerBodyByte = 6;

// Parses `body`. Fails with kInvalidArgument "invalid_json" (naming the
// offset) when it does not parse or nests deeper than 64, and with
// kTooLarge "body_too_complex" when its tree would need more memory than
// the bound above.
Result<boost::json::value> ParseJsonBody(std::string_view body);

// `v` serialized with every object's keys sorted (recursively), no spaces.
// Byte for byte what boost::json::serialize writes for each scalar (stored
// digests depend on it), without a string allocated per key and value.
std::string CanonicalJson(const boost::json::value& v);

// Appends `text` as a JSON string, escaped exactly as boost::json::serialize
// escapes it; without allocating when nothing needs escaping (the usual
// case).
void AppendJsonString(std::string& out, std::string_view text);

namespace request_error {
// A 400 about a request's field: `reason` is the error's code
// ("invalid_type", "missing_field", ...), `field` the field's name as the
// client wrote it, `message` what was wrong with it. The request parsers
// say `using request_error::Bad;`.
inline Status Bad(std::string reason, std::string field, std::string message) {
  return Status::Invalid(std::move(reason), std::move(message), std::move(field));
}
}  // namespace request_error

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_API_JSON_BODY_H_
