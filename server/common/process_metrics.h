// SPDX-License-Identifier: Apache-2.0
// The process_* metrics every Prometheus client library exports (the
// names and units of the Go and Python clients), read from /proc/self.
#ifndef TICKWHEEL_SERVER_COMMON_PROCESS_METRICS_H_
#define TICKWHEEL_SERVER_COMMON_PROCESS_METRICS_H_

#include <string>

namespace tickwheel::server {

// Appends process_cpu_seconds_total, process_resident_memory_bytes,
// process_virtual_memory_bytes, process_open_fds, process_max_fds and
// process_start_time_seconds. A value that cannot be read (no /proc) is
// left out rather than shown as 0.
// Cost: a few small reads of /proc per call; any thread.
void AppendProcessMetrics(std::string& out);

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_COMMON_PROCESS_METRICS_H_
