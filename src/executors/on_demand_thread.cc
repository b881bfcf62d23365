// SPDX-License-Identifier: Apache-2.0
#include "tickwheel/internal/on_demand_thread.h"

#include <utility>

namespace tickwheel::internal {

std::thread OnDemandThread::StartLocked(std::function<void()> body) {
  // Everything that can fail comes first, while nothing has changed: a
  // previous, ended thread stays in thread_ to be joined (destroying it
  // joinable would terminate the process).
  std::unique_ptr<Sleeper> sleeper = clock_.NewSleeper();
  // The new thread waits for the owner's mutex, which the caller holds,
  // before it looks at sleeper_ or running_.
  std::thread thread(std::move(body));
  std::thread ended = std::exchange(thread_, std::move(thread));
  sleeper_ = std::move(sleeper);
  running_ = true;
  return ended;
}

}  // namespace tickwheel::internal
