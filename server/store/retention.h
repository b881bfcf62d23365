// Retention: deletes delivered and cancelled timers some time after they
// finished, so the store does not grow forever. Dead letters (failed) are
// kept until they are retried.
#ifndef TICKWHEEL_SERVER_STORE_RETENTION_H_
#define TICKWHEEL_SERVER_STORE_RETENTION_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "store/timer_store.h"

namespace tickwheel::server {

// Thread safety: PurgeOnce from one thread at a time; Start/Stop from the
// owner. Cost: one range scan of the state index and one store write per
// 1,000 timers deleted.
//
//   Retention retention(store, std::chrono::hours(24 * 7));
//   retention.Start();   // a sweep every min(retention / 2, 1 min)
class Retention {
 public:
  // REQUIRES: `keep` > 0.
  Retention(TimerStore& store, std::chrono::milliseconds keep);
  ~Retention();

  // Deletes what finished more than `keep` before `now_ms`; returns how
  // many timers were deleted. Waits for the writes.
  std::size_t PurgeOnce(std::int64_t now_ms);

  void Start();
  void Stop();  // idempotent

 private:
  TimerStore& store_;
  const std::chrono::milliseconds keep_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stop_ = false;  // GUARDED_BY(mutex_)
  std::thread thread_;
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_STORE_RETENTION_H_
