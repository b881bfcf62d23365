// SPDX-License-Identifier: Apache-2.0
// Oracles shared by the fuzzers of the server's decoders: what a valid id,
// subject and URL are, written again from the documentation (not calling the
// code under test), and what every error must look like.
#ifndef TICKWHEEL_TESTS_FUZZ_DECODER_CHECKS_H_
#define TICKWHEEL_TESTS_FUZZ_DECODER_CHECKS_H_

#include <boost/json.hpp>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <string>
#include <string_view>

#include "api/timer_json.h"
#include "common/status.h"
#include "fuzz_source.h"

namespace tickwheel::testing {

// Ids: 1..128 characters of [A-Za-z0-9._~-] (docs/server.md).
inline bool IsValidId(std::string_view id) {
  if (id.empty() || id.size() > 128) return false;
  for (char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (c >= '0' && c <= '9') || c == '.' || c == '_' ||
                    c == '~' || c == '-';
    if (!ok) return false;
  }
  return true;
}

// A JetStream subject one can publish to: 1..256 bytes, tokens separated by
// '.', none empty, no wildcard, no space or control character, not an API
// subject (starting with '$').
inline bool IsValidSubject(std::string_view s) {
  if (s.empty() || s.size() > 256 || s.front() == '$') return false;
  std::size_t token = 0;
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f || c == '*' || c == '>') return false;
    if (c == '.') {
      if (token == 0) return false;
      token = 0;
    } else {
      ++token;
    }
  }
  return token != 0;
}

// Whether `s` is well-formed UTF-8.
inline bool IsUtf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = 0;
    std::uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xe0) == 0xc0) {
      n = 1, cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      n = 2, cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      n = 3, cp = c & 0x07;
    } else {
      return false;
    }
    if (i + n >= s.size()) return false;  // truncated sequence
    for (std::size_t k = 1; k <= n; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3f);
    }
    static constexpr std::uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += n + 1;
  }
  return true;
}

// Every error a decoder returns: a status a client can act on (400 or 413),
// a stable reason from the documented set, a message for people, and an
// error body (ErrorJson, as the API answers) that is valid JSON carrying
// both. Aborts (so the fuzzer keeps the input) otherwise.
inline void CheckError(const server::Status& s, std::string_view what) {
  static constexpr std::string_view kReasons[] = {
      "invalid_json",       "body_too_complex", "invalid_type",      "unknown_field",
      "missing_field",      "conflicting_fields", "negative_delay",  "beyond_horizon",
      "invalid_value",      "out_of_range",     "unsupported_target", "reserved_header",
      "invalid_id",         "payload_too_large", "batch_too_large",  "duplicate_id",
      "invalid_flow",       "invalid_trace_context"};
  const std::string where(what);
  if (s.ok()) FuzzFail(where + ": an error that is ok");
  bool known = false;
  for (std::string_view r : kReasons) known = known || s.reason() == r;
  if (!known) FuzzFail(where + ": unknown error reason \"" + s.reason() + "\"");
  if (s.message().empty()) FuzzFail(where + ": empty error message");
  const int status = server::HttpStatusOf(s);
  if (status != 400 && status != 413) {
    FuzzFail(where + ": error status " + std::to_string(status));
  }
  const std::string body = server::ErrorJson(s);
  boost::system::error_code ec;
  const boost::json::value v = boost::json::parse(body, ec);
  if (ec) {
    FuzzFail(where + ": the error body is not valid JSON (" + ec.message() + "): " + body);
  }
  const boost::json::value* err =
      v.is_object() ? v.as_object().if_contains("error") : nullptr;
  const boost::json::value* code =
      err && err->is_object() ? err->as_object().if_contains("code") : nullptr;
  const boost::json::value* message =
      err && err->is_object() ? err->as_object().if_contains("message") : nullptr;
  // A message quoting bytes that are not UTF-8 has them replaced.
  if (code == nullptr || message == nullptr || *code != boost::json::value(s.reason()) ||
      !message->is_string() ||
      (IsUtf8(s.message()) && *message != boost::json::value(s.message()))) {
    FuzzFail(where + ": the error body does not carry code and message: " + body);
  }
}

}  // namespace tickwheel::testing

#endif  // TICKWHEEL_TESTS_FUZZ_DECODER_CHECKS_H_
