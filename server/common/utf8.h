// SPDX-License-Identifier: Apache-2.0
// Text that must be valid UTF-8 (JSON) but may quote a client's bytes.
#ifndef TICKWHEEL_SERVER_COMMON_UTF8_H_
#define TICKWHEEL_SERVER_COMMON_UTF8_H_

#include <string>
#include <string_view>

namespace tickwheel::server {

// `text` with every byte that is not part of a well-formed UTF-8 sequence
// (stray bytes, overlongs, surrogates, a sequence cut short) replaced by
// U+FFFD.
std::string ValidUtf8(std::string_view text);

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_COMMON_UTF8_H_
