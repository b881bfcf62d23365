// SPDX-License-Identifier: Apache-2.0
// What the attack tests (server_attack_test: tests/server/attack/) share.
// The real `tickwheel serve` is attacked there as docs/server.md's "Threat
// model" says it may be: by a web page the developer visits, by clients
// that send headers and then nothing or hold thousands of connections, by
// a name server or a database that stops answering, and by a misconfigured
// cluster. Each test says what it shows; each failed on the build before
// its fix.
#ifndef TICKWHEEL_TESTS_SERVER_ATTACK_ATTACK_UTIL_H_
#define TICKWHEEL_TESTS_SERVER_ATTACK_ATTACK_UTIL_H_

#include <sys/resource.h>

#include <chrono>
#include <string>

#include "server_test_util.h"
#include "support/raw_connection.h"

namespace tickwheel::testing {

inline constexpr const char* kAdmin = "admin-token-0123456789abcdef";

// This process may hold many connections: its open-files limit to the hard
// limit.
inline void RaiseOpenFiles() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

inline double MsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

// Sends `request` on a new connection; the answer.
inline std::string Send(int port, const std::string& request) {
  RawConnection c(port);
  c.Send(request);
  return c.ReadResponse(std::chrono::seconds(10));
}

}  // namespace tickwheel::testing

#endif  // TICKWHEEL_TESTS_SERVER_ATTACK_ATTACK_UTIL_H_
