// SPDX-License-Identifier: Apache-2.0
#include "tickwheel/internal/on_demand_thread.h"

#include <utility>

namespace tickwheel::internal {

std::thread OnDemandThread::StartLocked(std::function<void()> body) {
  std::thread ended = std::move(thread_);
  sleeper_ = clock_.NewSleeper();
  running_ = true;
  try {
    thread_ = std::thread(std::move(body));
  } catch (...) {
    running_ = false;
    sleeper_.reset();
    thread_ = std::move(ended);  // still ended, still to be joined
    throw;
  }
  return ended;
}

}  // namespace tickwheel::internal
