// SPDX-License-Identifier: Apache-2.0
// Percent-encoding of path segments and query values, for the client's
// calls and the CLI's (app/client.cc). Not installed.
#ifndef TICKWHEEL_SRC_CLIENT_PERCENT_ENCODE_H_
#define TICKWHEEL_SRC_CLIENT_PERCENT_ENCODE_H_

#include <string>
#include <string_view>

namespace tickwheel::client::internal {

// Percent-encodes everything but RFC 3986's unreserved characters.
std::string PercentEncode(std::string_view text);

}  // namespace tickwheel::client::internal

#endif  // TICKWHEEL_SRC_CLIENT_PERCENT_ENCODE_H_
