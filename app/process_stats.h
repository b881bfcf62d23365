// SPDX-License-Identifier: Apache-2.0
// What this process uses: resident memory and CPU time.
#ifndef TICKWHEEL_APP_PROCESS_STATS_H_
#define TICKWHEEL_APP_PROCESS_STATS_H_

#include <cstddef>

#include "tickwheel/time.h"

namespace tickwheel::app {

// Resident set size in bytes (from /proc/self/statm); 0 if unreadable.
std::size_t ResidentBytes();

// User plus system CPU time used by all threads of the process so far.
Duration CpuTime();

}  // namespace tickwheel::app

#endif  // TICKWHEEL_APP_PROCESS_STATS_H_
