// SPDX-License-Identifier: Apache-2.0
// Keeping secrets out of logs and error messages.
#ifndef TICKWHEEL_SERVER_COMMON_REDACT_H_
#define TICKWHEEL_SERVER_COMMON_REDACT_H_

#include <string>
#include <string_view>

namespace tickwheel::server {

// `url` with its credentials replaced by "***": the password of
// scheme://user:password@host, a NATS token in nats://token@host, and the
// value of a password= or token= parameter (PostgreSQL URLs and key=value
// connection strings).
std::string RedactUrl(std::string_view url);

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_COMMON_REDACT_H_
