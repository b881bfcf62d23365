// SPDX-License-Identifier: Apache-2.0
// Little helpers for the stores' binary record formats: fixed-size values
// in host byte order and length-prefixed strings (store/record_codec.h,
// schedule/schedule_record.h).
#ifndef TICKWHEEL_SERVER_COMMON_BINARY_CODEC_H_
#define TICKWHEEL_SERVER_COMMON_BINARY_CODEC_H_

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace tickwheel::server {

template <typename T>
void PutFixed(std::string& out, T value) {
  char buf[sizeof(T)];
  std::memcpy(buf, &value, sizeof(T));
  out.append(buf, sizeof(T));
}

inline void PutString(std::string& out, std::string_view s) {
  PutFixed<std::uint32_t>(out, static_cast<std::uint32_t>(s.size()));
  out.append(s);
}

// An optional int64: a presence byte, then the value if present.
inline void PutOptional(std::string& out, const std::optional<std::int64_t>& v) {
  PutFixed<std::uint8_t>(out, v ? 1 : 0);
  if (v) PutFixed(out, *v);
}

// Reads what the Put functions wrote; every method returns false (and
// reads nothing more) once the input runs out.
class BinaryReader {
 public:
  explicit BinaryReader(std::string_view in) : in_(in) {}
  template <typename T>
  bool Fixed(T& value) {
    if (in_.size() < sizeof(T)) return false;
    std::memcpy(&value, in_.data(), sizeof(T));
    in_.remove_prefix(sizeof(T));
    return true;
  }
  bool String(std::string& s) {
    std::uint32_t n = 0;
    if (!Fixed(n) || in_.size() < n) return false;
    s.assign(in_.data(), n);
    in_.remove_prefix(n);
    return true;
  }
  bool Optional(std::optional<std::int64_t>& v) {
    std::uint8_t present = 0;
    if (!Fixed(present) || present > 1) return false;
    if (!present) {
      v.reset();
      return true;
    }
    std::int64_t x = 0;
    if (!Fixed(x)) return false;
    v = x;
    return true;
  }
  bool done() const { return in_.empty(); }

 private:
  std::string_view in_;
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_COMMON_BINARY_CODEC_H_
