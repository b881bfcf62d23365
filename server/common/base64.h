// SPDX-License-Identifier: Apache-2.0
// Base64 (RFC 4648, the standard alphabet with padding), for webhook
// secrets and signatures.
#ifndef TICKWHEEL_SERVER_COMMON_BASE64_H_
#define TICKWHEEL_SERVER_COMMON_BASE64_H_

#include <optional>
#include <string>
#include <string_view>

namespace tickwheel::server {

std::string Base64Encode(std::string_view bytes);
// nullopt if `text` is not base64 (wrong characters, length or padding).
std::optional<std::string> Base64Decode(std::string_view text);

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_COMMON_BASE64_H_
