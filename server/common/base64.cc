// SPDX-License-Identifier: Apache-2.0
#include "common/base64.h"

#include <array>

namespace tickwheel::server {
namespace {

constexpr std::string_view kAlphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

constexpr std::array<signed char, 256> DecodeTable() {
  std::array<signed char, 256> t{};
  for (auto& v : t) v = -1;
  for (std::size_t i = 0; i < kAlphabet.size(); ++i) {
    t[static_cast<unsigned char>(kAlphabet[i])] = static_cast<signed char>(i);
  }
  return t;
}

}  // namespace

std::string Base64Encode(std::string_view in) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  std::size_t i = 0;
  auto byte = [&](std::size_t k) { return static_cast<unsigned>(static_cast<unsigned char>(in[k])); };
  for (; i + 2 < in.size(); i += 3) {
    const unsigned v = byte(i) << 16 | byte(i + 1) << 8 | byte(i + 2);
    out += kAlphabet[v >> 18 & 63];
    out += kAlphabet[v >> 12 & 63];
    out += kAlphabet[v >> 6 & 63];
    out += kAlphabet[v & 63];
  }
  if (i + 1 == in.size()) {
    const unsigned v = byte(i) << 16;
    out += kAlphabet[v >> 18 & 63];
    out += kAlphabet[v >> 12 & 63];
    out += "==";
  } else if (i + 2 == in.size()) {
    const unsigned v = byte(i) << 16 | byte(i + 1) << 8;
    out += kAlphabet[v >> 18 & 63];
    out += kAlphabet[v >> 12 & 63];
    out += kAlphabet[v >> 6 & 63];
    out += '=';
  }
  return out;
}

std::optional<std::string> Base64Decode(std::string_view in) {
  static constexpr std::array<signed char, 256> kTable = DecodeTable();
  if (in.size() % 4 != 0) return std::nullopt;
  std::size_t padding = 0;
  if (!in.empty() && in.back() == '=') ++padding;
  if (in.size() > 1 && in[in.size() - 2] == '=') ++padding;
  std::string out;
  out.reserve(in.size() / 4 * 3);
  for (std::size_t i = 0; i < in.size(); i += 4) {
    unsigned v = 0;
    for (std::size_t k = 0; k < 4; ++k) {
      const char c = in[i + k];
      const bool pad_slot = i + 4 == in.size() && k >= 4 - padding;
      if (pad_slot) {
        if (c != '=') return std::nullopt;
        v <<= 6;
        continue;
      }
      const signed char d = kTable[static_cast<unsigned char>(c)];
      if (d < 0) return std::nullopt;
      v = v << 6 | static_cast<unsigned>(d);
    }
    out += static_cast<char>(v >> 16 & 0xff);
    out += static_cast<char>(v >> 8 & 0xff);
    out += static_cast<char>(v & 0xff);
  }
  out.resize(out.size() - padding);
  return out;
}

}  // namespace tickwheel::server
