// SPDX-License-Identifier: Apache-2.0
// Keeping secrets out of logs and error messages.
#ifndef TICKWHEEL_SERVER_COMMON_REDACT_H_
#define TICKWHEEL_SERVER_COMMON_REDACT_H_

#include <string>
#include <string_view>

namespace tickwheel::server {

// `url` with its credentials replaced by "***": the password of
// scheme://user:password@host (which may hold '?', '#' and '@' raw, as
// libpq reads it), a NATS token in nats://token@host, and the value of a
// password, sslpassword, token or nkey parameter, in a URL's query or a
// key=value connection string (`password = 'a b'`: spaces around '=' and
// quoted values as libpq takes them).
std::string RedactUrl(std::string_view url);

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_COMMON_REDACT_H_
