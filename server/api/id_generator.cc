// SPDX-License-Identifier: Apache-2.0
#include "api/id_generator.h"

#include <sys/random.h>

#include <cerrno>
#include <cstdint>
#include <stdexcept>
#include <system_error>

namespace tickwheel::server {

std::vector<std::string> GenerateIds(std::size_t n) {
  std::vector<std::uint8_t> bits(16 * n);
  std::size_t filled = 0;
  while (filled < bits.size()) {
    const ssize_t got = getrandom(bits.data() + filled, bits.size() - filled, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      throw std::system_error(errno, std::generic_category(), "getrandom");
    }
    filled += static_cast<std::size_t>(got);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::vector<std::string> ids(n, std::string(32, '0'));
  for (std::size_t i = 0; i < n; ++i) {
    for (int b = 0; b < 16; ++b) {
      const std::uint8_t byte = bits[16 * i + static_cast<std::size_t>(b)];
      ids[i][2 * b] = kHex[byte >> 4];
      ids[i][2 * b + 1] = kHex[byte & 15];
    }
  }
  return ids;
}

}  // namespace tickwheel::server
