// SPDX-License-Identifier: Apache-2.0
#include "common/sha256.h"

#include <openssl/sha.h>

namespace tickwheel::server {

std::array<std::uint8_t, 32> Sha256(std::string_view bytes) {
  std::array<std::uint8_t, 32> out;
  SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), out.data());
  return out;
}

}  // namespace tickwheel::server
