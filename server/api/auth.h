// SPDX-License-Identifier: Apache-2.0
// API access: bearer tokens with a role (--auth-token-file), checked on
// every /v1 route (and /metrics with --metrics-auth).
#ifndef TICKWHEEL_SERVER_API_AUTH_H_
#define TICKWHEEL_SERVER_API_AUTH_H_

#include <array>
#include <boost/beast/http/verb.hpp>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "api/http_response.h"
#include "common/status.h"

namespace tickwheel::server {

enum class Role {
  kAnonymous,  // the server runs without tokens: anyone may do anything
  kRead,       // may only GET
  kAdmin,      // may do everything, and see target header values
};
std::string_view RoleName(Role role);

// Tokens and their roles. Tokens are kept as SHA-256 digests and compared
// in constant time (every token is compared, whatever matches); neither a
// token nor a digest is ever logged or put in an answer.
//
// Thread safety: immutable after it is made; use from any thread.
//
//   Result<TokenAuth> auth = TokenAuth::FromFile("/etc/tickwheel/tokens");
//   Result<Role> role = auth->Authenticate(req);        // 401 if not ok
//   Status s = TokenAuth::Authorize(*role, req.method()); // 403 if not ok
class TokenAuth {
 public:
  // No tokens: every request is anonymous and allowed.
  TokenAuth() = default;

  // One "ROLE TOKEN" a line, ROLE being admin or read; blank lines and
  // lines starting with '#' are skipped. Tokens are 16..512 characters of
  // [A-Za-z0-9-._~+/=] (RFC 6750), each given once. A bad line is
  // kInvalidArgument "bad_flag" naming the file and line, never the token.
  static Result<TokenAuth> FromFile(const std::string& path);
  static Result<TokenAuth> FromLines(const std::vector<std::string>& lines,
                                     const std::string& source);

  bool enabled() const { return !tokens_.empty(); }
  std::size_t size() const { return tokens_.size(); }

  // The role of the request's `Authorization: Bearer TOKEN`; kAnonymous
  // when there are no tokens. kUnauthenticated ("unauthenticated" without
  // a token, "invalid_token" with a wrong one) otherwise.
  Result<Role> Authenticate(const HttpRequest& req) const;
  Result<Role> AuthenticateToken(std::string_view token) const;

  // A read token may only GET (and HEAD); kPermissionDenied "forbidden"
  // otherwise.
  static Status Authorize(Role role, boost::beast::http::verb method);

 private:
  struct Token {
    Role role;
    std::array<std::uint8_t, 32> digest;
  };
  std::vector<Token> tokens_;
};

// A 401 with its WWW-Authenticate header (RFC 6750), or a 403.
HttpResponse AuthErrorResponse(const Status& status);

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_API_AUTH_H_
