// Scheduler: the in-memory tier. Keeps the timers due within a look-ahead
// window in a Wheel and refills it from the store's due index as time moves.
#ifndef TICKWHEEL_SERVER_SCHEDULER_SCHEDULER_H_
#define TICKWHEEL_SERVER_SCHEDULER_SCHEDULER_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "store/timer_store.h"
#include "tickwheel/wheel.h"

namespace tickwheel::server {

struct SchedulerOptions {
  // Timers due within this much of now are kept in memory.
  std::chrono::milliseconds window{std::chrono::seconds(60)};
  // At most this many timers in memory (in the wheel or in flight); beyond
  // it the window shrinks (a backlog is loaded as it drains).
  std::size_t max_window_timers = 200'000;
};

// The Scheduler owns, for each timer it has loaded, an entry that is either
// waiting in the wheel or in flight (handed to `fire`, not yet Finished).
// Invariant: every scheduled timer of the store (pending or delivering) with
// due_ms < window_end() is in the map, or is being delivered. The map is a
// hint, the store is the truth: whoever receives a fired entry re-reads the
// record and drops it if it changed (stale).
//
// Thread safety: Arm, Disarm and Finish may be called from any thread;
// `fire` is called on the scheduler's thread, with no lock held.
// Memory: one wheel node and one map entry per loaded timer.
//
//   Scheduler scheduler(store, {}, [&](std::vector<DueEntry> due) {...});
//   scheduler.Start();
//   scheduler.Arm(id, due_ms);   // after the store made it pending
class Scheduler {
 public:
  using Fire = std::function<void(std::vector<DueEntry>)>;

  Scheduler(TimerStore& store, SchedulerOptions options, Fire fire);
  ~Scheduler();

  // Starts the thread; its first refill loads everything overdue.
  void Start();
  // Stops firing; after it returns `fire` is not called again. Idempotent.
  void Stop();

  // `id` is now scheduled in the store at `due_ms` (after a durable write).
  // If it is in flight, the new time applies once it is Finished.
  void Arm(const std::string& id, std::int64_t due_ms);
  // `id` is no longer scheduled (cancelled).
  void Disarm(const std::string& id);
  // The receiver of a fired entry is done with it. REQUIRES: `id` in flight.
  void Finish(const std::string& id);

  std::size_t loaded() const;     // in the wheel or in flight
  std::size_t in_flight() const;
  std::int64_t window_end_ms() const;
  // The number of refills done; 1 after the first (recovery) load.
  std::uint64_t refills() const;

 private:
  struct Entry {
    TimerId timer;        // valid while waiting in the wheel
    std::int64_t due_ms;
    bool in_flight = false;
    std::optional<std::int64_t> rearm;  // set while in flight
  };

  void Loop();
  void Refill(std::int64_t now_ms);
  // REQUIRES: mutex_ held, `id` not in the map or in flight.
  void PlaceLocked(const std::string& id, Entry& entry, std::int64_t due_ms);

  TimerStore& store_;
  const SchedulerOptions options_;
  const Fire fire_;

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  Wheel<std::string> wheel_;                         // GUARDED_BY(mutex_)
  std::unordered_map<std::string, Entry> entries_;   // GUARDED_BY(mutex_)
  std::size_t in_flight_ = 0;                        // GUARDED_BY(mutex_)
  std::int64_t window_end_ms_ = INT64_MIN;           // GUARDED_BY(mutex_)
  TimePoint sleeping_until_ = TimePoint::max();                      // GUARDED_BY(mutex_)
  std::uint64_t refills_ = 0;                        // GUARDED_BY(mutex_)
  bool stop_ = false;                                // GUARDED_BY(mutex_)
  std::thread thread_;
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_SCHEDULER_SCHEDULER_H_
