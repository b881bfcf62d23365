// SPDX-License-Identifier: Apache-2.0
#include "timer/target.h"

namespace tickwheel::server {

Status CheckNatsSubject(std::string_view subject) {
  auto bad = [](std::string message) { return Status::Invalid("invalid_value", std::move(message)); };
  if (subject.empty() || subject.size() > 256) return bad("must be 1..256 characters");
  if (subject.front() == '.' || subject.back() == '.' ||
      subject.find("..") != std::string_view::npos) {
    return bad("has an empty token (leading, trailing or double '.')");
  }
  if (subject.front() == '$') {
    return bad("starts with '$': JetStream and system API subjects are not targets");
  }
  for (char c : subject) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
      return bad("contains a space or control character");
    }
    if (c == '*' || c == '>') return bad("contains a wildcard ('*' or '>'); publish to one subject");
  }
  return Status::Ok();
}

}  // namespace tickwheel::server
