// SPDX-License-Identifier: Apache-2.0
// Case folding of protocol text (schemes, host names, header names and
// values, media types): ASCII letters only, whatever the process's locale.
#ifndef TICKWHEEL_SERVER_COMMON_ASCII_CASE_H_
#define TICKWHEEL_SERVER_COMMON_ASCII_CASE_H_

#include <string>
#include <string_view>

namespace tickwheel::server {

// `s` with 'A'-'Z' made 'a'-'z'; every other byte as it was.
inline std::string AsciiLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_COMMON_ASCII_CASE_H_
