// SPDX-License-Identifier: Apache-2.0
#include "common/status.h"

namespace tickwheel::server {
namespace {

std::string_view CodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "ok";
    case StatusCode::kInvalidArgument: return "invalid argument";
    case StatusCode::kTooLarge: return "too large";
    case StatusCode::kNotFound: return "not found";
    case StatusCode::kConflict: return "conflict";
    case StatusCode::kUnauthenticated: return "unauthenticated";
    case StatusCode::kPermissionDenied: return "permission denied";
    case StatusCode::kUnavailable: return "unavailable";
    case StatusCode::kFenced: return "fenced";
    case StatusCode::kCorrupt: return "corrupt";
  }
  return "?";
}

}  // namespace

std::string Status::ToString() const {
  if (ok()) return "ok";
  std::string out(CodeName(code_));
  if (!reason_.empty()) out += " " + reason_;
  out += ": " + message_;
  if (!field_.empty()) out += " (field " + field_ + ")";
  return out;
}

}  // namespace tickwheel::server
