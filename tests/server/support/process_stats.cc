// SPDX-License-Identifier: Apache-2.0
#include "support/process_stats.h"

#include <filesystem>
#include <fstream>
#include <string>

namespace tickwheel::testing {

ProcessStats ReadProcessStats(pid_t pid) {
  ProcessStats stats;
  const std::string proc = "/proc/" + std::to_string(pid);
  std::ifstream status(proc + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) {
      stats.rss_kb = std::stoll(line.substr(6));
      break;
    }
  }
  std::error_code ec;
  std::int64_t fds = 0;
  for (std::filesystem::directory_iterator it(proc + "/fd", ec), end; !ec && it != end;
       it.increment(ec)) {
    ++fds;
  }
  if (!ec) stats.open_fds = fds;
  return stats;
}

}  // namespace tickwheel::testing
