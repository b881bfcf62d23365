// SPDX-License-Identifier: Apache-2.0
// SHA-256 (OpenSSL), for digests that must stay the same across builds and
// standard libraries.
#ifndef TICKWHEEL_SERVER_COMMON_SHA256_H_
#define TICKWHEEL_SERVER_COMMON_SHA256_H_

#include <array>
#include <cstdint>
#include <string_view>

namespace tickwheel::server {

std::array<std::uint8_t, 32> Sha256(std::string_view bytes);

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_COMMON_SHA256_H_
