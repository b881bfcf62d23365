// SPDX-License-Identifier: Apache-2.0
// Retention: deletes delivered and cancelled timers some time after they
// finished, so the store does not grow forever. Dead letters (failed) are
// kept until they are retried.
#ifndef TICKWHEEL_SERVER_STORE_RETENTION_H_
#define TICKWHEEL_SERVER_STORE_RETENTION_H_

#include <chrono>
#include <cstdint>
#include <memory>

#include "common/server_clock.h"
#include "store/timer_store.h"
#include "tickwheel/internal/periodic_thread.h"

namespace tickwheel::server {

// Thread safety: PurgeOnce from one thread at a time; Start/Stop from the
// owner. Cost: one range scan of the state index and one store write per
// 1,000 timers deleted.
//
//   Retention retention(store, clock, std::chrono::hours(24 * 7));
//   retention.Start();   // a sweep every min(retention / 2, 1 min)
class Retention {
 public:
  // REQUIRES: `keep` > 0; `store` and `clock` outlive this.
  Retention(TimerStore& store, ServerClock& clock, std::chrono::milliseconds keep);
  ~Retention();

  // Deletes what finished more than `keep` before now; returns how many
  // timers were deleted. Waits for the writes; stops at the first failure.
  std::size_t PurgeOnce();

  void Start();
  void Stop();  // idempotent

 private:
  TimerStore& store_;
  ServerClock& clock_;
  const std::chrono::milliseconds keep_;
  std::unique_ptr<internal::PeriodicThread> sweeper_;
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_STORE_RETENTION_H_
