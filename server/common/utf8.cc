// SPDX-License-Identifier: Apache-2.0
#include "common/utf8.h"

namespace tickwheel::server {

std::string ValidUtf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    int n = c < 0x80 ? 0 : (c >> 5) == 0x6 ? 1 : (c >> 4) == 0xe ? 2 : (c >> 3) == 0x1e ? 3 : -1;
    bool ok = n >= 0 && i + static_cast<std::size_t>(n) < text.size() + (n == 0 ? 1 : 0);
    char32_t cp = n == 0 ? c : n == 1 ? (c & 0x1f) : n == 2 ? (c & 0x0f) : (c & 0x07);
    for (int k = 1; ok && k <= n; ++k) {
      const auto cc = static_cast<unsigned char>(text[i + static_cast<std::size_t>(k)]);
      ok = (cc >> 6) == 0x2;
      cp = (cp << 6) | (cc & 0x3f);
    }
    static constexpr char32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    ok = ok && cp >= kMin[n < 0 ? 0 : n] && cp <= 0x10ffff && !(cp >= 0xd800 && cp <= 0xdfff);
    if (!ok) {
      out += "\xef\xbf\xbd";  // U+FFFD
      ++i;
      continue;
    }
    out.append(text.substr(i, static_cast<std::size_t>(n) + 1));
    i += static_cast<std::size_t>(n) + 1;
  }
  return out;
}

}  // namespace tickwheel::server
