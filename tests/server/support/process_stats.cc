// SPDX-License-Identifier: Apache-2.0
#include "support/process_stats.h"

#include <filesystem>
#include <fstream>
#include <string>

namespace tickwheel::testing {
namespace {

// A field of /proc/PID/status in kB; -1 if unreadable.
std::int64_t StatusKb(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(field + ":", 0) == 0) return std::stoll(line.substr(field.size() + 1));
  }
  return -1;
}

}  // namespace

ProcessStats ReadProcessStats(pid_t pid) {
  ProcessStats stats;
  const std::string proc = "/proc/" + std::to_string(pid);
  stats.rss_kb = StatusKb(pid, "VmRSS");
  std::error_code ec;
  std::int64_t fds = 0;
  for (std::filesystem::directory_iterator it(proc + "/fd", ec), end; !ec && it != end;
       it.increment(ec)) {
    ++fds;
  }
  if (!ec) stats.open_fds = fds;
  return stats;
}

std::int64_t PeakRssGrowthKb(pid_t pid, const std::function<void()>& during) {
  std::ofstream("/proc/" + std::to_string(pid) + "/clear_refs") << "5";
  const std::int64_t before_kb = StatusKb(pid, "VmRSS");
  during();
  const std::int64_t peak_kb = StatusKb(pid, "VmHWM");
  return before_kb < 0 || peak_kb < 0 ? -1 : peak_kb - before_kb;
}

}  // namespace tickwheel::testing
