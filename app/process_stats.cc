// SPDX-License-Identifier: Apache-2.0
#include "process_stats.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>

namespace tickwheel::app {

std::size_t ResidentBytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long size = 0;
  unsigned long resident = 0;
  const int read = std::fscanf(f, "%lu %lu", &size, &resident);
  std::fclose(f);
  if (read != 2) return 0;
  return resident * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

Duration CpuTime() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto to_ns = [](const timeval& tv) {
    return Duration(std::int64_t{tv.tv_sec} * 1'000'000'000 +
                    std::int64_t{tv.tv_usec} * 1'000);
  };
  return to_ns(usage.ru_utime) + to_ns(usage.ru_stime);
}

}  // namespace tickwheel::app
