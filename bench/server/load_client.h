// SPDX-License-Identifier: Apache-2.0
// An HTTP load generator: C keep-alive connections on one thread, each
// sending the next request as soon as the previous answer arrived.
#ifndef TICKWHEEL_BENCH_SERVER_LOAD_CLIENT_H_
#define TICKWHEEL_BENCH_SERVER_LOAD_CLIENT_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace tickwheel::bench {

struct LoadResult {
  std::uint64_t ok = 0;      // answers with the expected status
  std::uint64_t failed = 0;  // other answers or errors
  double seconds = 0;
};

// Runs `connections` connections to host:port until `total` requests were
// answered or `duration` passed. `body(i)` makes the i-th request's body
// (POSTed to `target`); `expected` is the status that counts as ok.
LoadResult RunLoad(const std::string& host, int port, int connections,
                   std::uint64_t total, std::chrono::milliseconds duration,
                   const std::string& target,
                   const std::function<std::string(std::uint64_t)>& body,
                   int expected);

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_BENCH_SERVER_LOAD_CLIENT_H_
