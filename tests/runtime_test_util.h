// SPDX-License-Identifier: Apache-2.0
// Helpers for tests of the threaded runtime: wait for callbacks to happen,
// with a generous real-time bound that only matters when a test fails.
#ifndef TICKWHEEL_TESTS_RUNTIME_TEST_UTIL_H_
#define TICKWHEEL_TESTS_RUNTIME_TEST_UTIL_H_

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <thread>
#include <vector>

#include "tickwheel/clock.h"

namespace tickwheel::testing {

// How long a test waits for something that should happen at once.
inline constexpr std::chrono::seconds kPatience(30);

// A thread-safe log of events, each stamped with the clock's time when it
// was recorded.
template <typename Event>
class EventLog {
 public:
  struct Stamped {
    Event event;
    TimePoint at;
  };

  explicit EventLog(const Clock& clock) : clock_(clock) {}

  void Record(Event event) {
    {
      std::lock_guard lock(mutex_);
      events_.push_back({std::move(event), clock_.Now()});
    }
    cv_.notify_all();
  }

  // Waits until at least `n` events were recorded; false after kPatience.
  bool WaitForCount(std::size_t n) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, kPatience, [&] { return events_.size() >= n; });
  }

  // Waits until `done(events)` holds; false after kPatience.
  template <typename Pred>
  bool WaitUntil(Pred done) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, kPatience, [&] { return done(events_); });
  }

  // Waits until `event` was recorded; false after kPatience.
  bool WaitFor(const Event& event) {
    return WaitUntil([&](const std::vector<Stamped>& events) {
      for (const auto& e : events) {
        if (e.event == event) return true;
      }
      return false;
    });
  }

  std::vector<Stamped> events() const {
    std::lock_guard lock(mutex_);
    return events_;
  }
  // The events alone, in the order they were recorded.
  std::vector<Event> values() const {
    std::lock_guard lock(mutex_);
    std::vector<Event> values;
    for (const Stamped& e : events_) values.push_back(e.event);
    return values;
  }
  std::size_t size() const {
    std::lock_guard lock(mutex_);
    return events_.size();
  }

 private:
  const Clock& clock_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<Stamped> events_;
};

// Polls `done()` until it holds; false after kPatience. For state that
// worker threads change without an event to wait on, e.g. a cache shrinking
// as the expiry callbacks that a ManualClock's Advance handed out run.
template <typename F>
bool Eventually(F done) {
  const auto give_up = std::chrono::steady_clock::now() + kPatience;
  while (!done()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// A one-shot gate: threads Wait until someone Opens it.
class Gate {
 public:
  // Notifies under the lock: a waiter may destroy the gate as soon as it
  // sees it open.
  void Open() {
    std::lock_guard lock(mutex_);
    open_ = true;
    cv_.notify_all();
  }
  bool Wait() {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, kPatience, [&] { return open_; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool open_ = false;
};

}  // namespace tickwheel::testing

#endif  // TICKWHEEL_TESTS_RUNTIME_TEST_UTIL_H_
