// SPDX-License-Identifier: Apache-2.0
// What a process holds, read from /proc: resident memory and open file
// descriptors. For tests and the soak that watch the server stay bounded.
#ifndef TICKWHEEL_TESTS_SERVER_SUPPORT_PROCESS_STATS_H_
#define TICKWHEEL_TESTS_SERVER_SUPPORT_PROCESS_STATS_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>

namespace tickwheel::testing {

struct ProcessStats {
  std::int64_t rss_kb = -1;    // VmRSS of /proc/PID/status; -1 if unreadable
  std::int64_t open_fds = -1;  // entries of /proc/PID/fd; -1 if unreadable
};

// Works on a stopped (SIGSTOP) process too; -1s for one that is gone.
ProcessStats ReadProcessStats(pid_t pid);

// How far `pid`'s peak resident memory (VmHWM) rises above its resident
// memory (VmRSS) at the start while `during` runs: the peak is reset first
// (/proc/PID/clear_refs). -1 if unreadable.
std::int64_t PeakRssGrowthKb(pid_t pid, const std::function<void()>& during);

}  // namespace tickwheel::testing

#endif  // TICKWHEEL_TESTS_SERVER_SUPPORT_PROCESS_STATS_H_
