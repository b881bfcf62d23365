// SPDX-License-Identifier: Apache-2.0
#include "api/auth.h"

#include <openssl/crypto.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/sha256.h"

namespace tickwheel::server {

namespace http = boost::beast::http;

namespace {

constexpr std::size_t kMinTokenLength = 16;
constexpr std::size_t kMaxTokenLength = 512;

bool IsTokenChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) ||
         std::string_view("-._~+/=").find(c) != std::string_view::npos;
}

bool EqualsNoCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

std::string_view RoleName(Role role) {
  switch (role) {
    case Role::kAnonymous: return "anonymous";
    case Role::kRead: return "read";
    case Role::kAdmin: return "admin";
  }
  return "?";
}

Result<TokenAuth> TokenAuth::FromFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return Status::Invalid("bad_flag",
                           "--auth-token-file " + path + ": cannot read it: " + std::strerror(errno));
  }
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(std::move(line));
  return FromLines(lines, "--auth-token-file " + path);
}

Result<TokenAuth> TokenAuth::FromLines(const std::vector<std::string>& lines,
                                       const std::string& source) {
  TokenAuth auth;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::istringstream fields(lines[i]);
    std::string role_name, token, extra;
    fields >> role_name;
    if (role_name.empty() || role_name[0] == '#') continue;
    const std::string where = source + ", line " + std::to_string(i + 1);
    fields >> token >> extra;
    if (token.empty() || !extra.empty()) {
      return Status::Invalid("bad_flag", where + ": expected \"ROLE TOKEN\" (admin or read, then the token)");
    }
    Role role;
    if (role_name == "admin") {
      role = Role::kAdmin;
    } else if (role_name == "read") {
      role = Role::kRead;
    } else {
      // Not the word itself: a line with its columns swapped starts with
      // the token.
      return Status::Invalid("bad_flag", where + ": the first word must be the role, admin or "
                                             "read (is the line \"TOKEN ROLE\"? it must be "
                                             "\"ROLE TOKEN\")");
    }
    if (token.size() < kMinTokenLength || token.size() > kMaxTokenLength) {
      return Status::Invalid("bad_flag", where + ": a token must be 16..512 characters (it is " +
                                             std::to_string(token.size()) +
                                             "; e.g. openssl rand -hex 32)");
    }
    if (!std::all_of(token.begin(), token.end(), IsTokenChar)) {
      return Status::Invalid("bad_flag", where + ": a token may only hold letters, digits and -._~+/=");
    }
    const std::array<std::uint8_t, 32> digest = Sha256(token);
    for (const Token& t : auth.tokens_) {
      if (t.digest == digest) return Status::Invalid("bad_flag", where + ": this token is given twice");
    }
    auth.tokens_.push_back({role, digest});
  }
  if (auth.tokens_.empty()) {
    return Status::Invalid("bad_flag", source + ": no token in it (one \"ROLE TOKEN\" a line)");
  }
  return auth;
}

Result<Role> TokenAuth::AuthenticateToken(std::string_view token) const {
  if (!enabled()) return Role::kAnonymous;
  // Compared as digests (all the same length), against every token, so
  // that neither the time taken nor where it stops tells anything.
  const std::array<std::uint8_t, 32> digest = Sha256(token);
  int matched = 0;
  Role role = Role::kRead;
  for (const Token& t : tokens_) {
    const int equal = CRYPTO_memcmp(t.digest.data(), digest.data(), digest.size()) == 0;
    matched |= equal;
    if (equal) role = t.role;
  }
  if (!matched) {
    return Status(StatusCode::kUnauthenticated, "invalid_token",
                  "the bearer token is not one this server knows");
  }
  return role;
}

Result<Role> TokenAuth::Authenticate(const HttpRequest& req) const {
  if (!enabled()) return Role::kAnonymous;
  auto it = req.find(http::field::authorization);
  if (it == req.end()) {
    return Status(StatusCode::kUnauthenticated, "unauthenticated",
                  "this server needs a token: send Authorization: Bearer TOKEN");
  }
  std::string_view value = it->value();
  constexpr std::string_view kBearer = "bearer ";
  if (value.size() <= kBearer.size() || !EqualsNoCase(value.substr(0, kBearer.size()), kBearer)) {
    return Status(StatusCode::kUnauthenticated, "unauthenticated",
                  "the Authorization header must be \"Bearer TOKEN\"");
  }
  value.remove_prefix(kBearer.size());
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  while (!value.empty() && value.back() == ' ') value.remove_suffix(1);
  return AuthenticateToken(value);
}

Status TokenAuth::Authorize(Role role, http::verb method) {
  if (role != Role::kRead || method == http::verb::get || method == http::verb::head) {
    return Status::Ok();
  }
  return Status(StatusCode::kPermissionDenied, "forbidden",
                "a read token may only GET; " + std::string(http::to_string(method)) +
                    " needs an admin token");
}

HttpResponse AuthErrorResponse(const Status& status) {
  HttpResponse res = ErrorResponse(status);
  if (status.code() == StatusCode::kUnauthenticated) {
    res.set(http::field::www_authenticate,
            status.reason() == "invalid_token"
                ? R"(Bearer realm="tickwheel", error="invalid_token")"
                : R"(Bearer realm="tickwheel")");
  }
  return res;
}

}  // namespace tickwheel::server
