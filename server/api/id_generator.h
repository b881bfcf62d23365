// SPDX-License-Identifier: Apache-2.0
// Ids for timers created without one.
#ifndef TICKWHEEL_SERVER_API_ID_GENERATOR_H_
#define TICKWHEEL_SERVER_API_ID_GENERATOR_H_

#include <string>
#include <vector>

namespace tickwheel::server {

// `n` ids of 32 lower-case hex characters, each 128 bits from the kernel's
// random source (getrandom): a collision is never expected, and creates
// check for one anyway.
std::vector<std::string> GenerateIds(std::size_t n);

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_API_ID_GENERATOR_H_
