// SPDX-License-Identifier: Apache-2.0
#include "common/process_metrics.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "common/metrics.h"

namespace tickwheel::server {

namespace {

// The fields of /proc/self/stat after the command name: field 14 utime,
// 15 stime, 22 starttime (clock ticks since boot), 23 vsize, 24 rss (pages).
struct ProcStat {
  double cpu_seconds = 0;
  double start_ticks = 0;
  double virtual_bytes = 0;
  double resident_bytes = 0;
};

bool ReadProcStat(ProcStat& out) {
  std::ifstream in("/proc/self/stat");
  std::string line;
  if (!std::getline(in, line)) return false;
  const std::size_t close = line.rfind(')');  // the name may hold spaces
  if (close == std::string::npos) return false;
  std::istringstream fields(line.substr(close + 2));
  std::string field;
  double utime = 0, stime = 0;
  // fields[0] is field 3 (state).
  for (int n = 3; fields >> field; ++n) {
    if (n == 14) utime = std::stod(field);
    if (n == 15) stime = std::stod(field);
    if (n == 22) out.start_ticks = std::stod(field);
    if (n == 23) out.virtual_bytes = std::stod(field);
    if (n == 24) {
      out.resident_bytes = std::stod(field) * static_cast<double>(sysconf(_SC_PAGESIZE));
      const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
      out.cpu_seconds = (utime + stime) / ticks;
      return true;
    }
  }
  return false;
}

// Seconds since the Unix epoch at boot, from /proc/stat's btime.
bool BootTime(double& out) {
  std::ifstream in("/proc/stat");
  std::string key;
  while (in >> key) {
    if (key == "btime") return static_cast<bool>(in >> out);
    in.ignore(1 << 20, '\n');
  }
  return false;
}

bool OpenFds(double& out) {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return false;
  double n = 0;
  while (const dirent* e = readdir(dir)) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(dir);
  out = n - 1;  // the directory's own descriptor
  return true;
}

}  // namespace

void AppendProcessMetrics(std::string& out) {
  ProcStat stat;
  if (ReadProcStat(stat)) {
    out += "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n"
           "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total ";
    char value[32];
    std::snprintf(value, sizeof value, "%.2f\n", stat.cpu_seconds);
    out += value;
    AppendGaugeMetric(out, "process_resident_memory_bytes", "Resident memory size in bytes.",
                      stat.resident_bytes);
    AppendGaugeMetric(out, "process_virtual_memory_bytes", "Virtual memory size in bytes.",
                      stat.virtual_bytes);
    double boot = 0;
    if (BootTime(boot)) {
      AppendGaugeMetric(out, "process_start_time_seconds",
                        "Start time of the process since unix epoch in seconds.",
                        boot + stat.start_ticks / static_cast<double>(sysconf(_SC_CLK_TCK)));
    }
  }
  double fds = 0;
  if (OpenFds(fds)) {
    AppendGaugeMetric(out, "process_open_fds", "Number of open file descriptors.", fds);
  }
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0) {
    AppendGaugeMetric(out, "process_max_fds", "Maximum number of open file descriptors.",
                      static_cast<double>(limit.rlim_cur));
  }
}

}  // namespace tickwheel::server
