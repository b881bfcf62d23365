// SPDX-License-Identifier: Apache-2.0
// A thread that an owner starts when there is work and that ends itself when
// idle, with a Sleeper that lives exactly as long as the thread.
#ifndef TICKWHEEL_INTERNAL_ON_DEMAND_THREAD_H_
#define TICKWHEEL_INTERNAL_ON_DEMAND_THREAD_H_

#include <functional>
#include <memory>
#include <thread>

#include "tickwheel/clock.h"

namespace tickwheel::internal {

// OnDemandThread is the thread of DelayExecutor and of PeriodicalExecutor's
// flusher. All its state is guarded by the owner's mutex: owners declare it
// TW_GUARDED_BY that mutex, so every call (sleeper() too: the thread takes
// its Sleeper under the lock and sleeps after unlocking) needs it. The Sleeper is
// created when the thread starts, before StartLocked returns, so a
// ManualClock advanced afterwards waits for the thread; it is destroyed when
// the thread calls EndedLocked, so an idle owner holds neither.
class OnDemandThread {
 public:
  explicit OnDemandThread(Clock& clock) : clock_(clock) {}
  // REQUIRES: the thread has been taken and joined (TakeLocked).
  ~OnDemandThread() = default;

  OnDemandThread(const OnDemandThread&) = delete;
  OnDemandThread& operator=(const OnDemandThread&) = delete;

  bool running() const { return running_; }

  // REQUIRES: !running(); `body` first takes the owner's mutex. Starts
  // `body` on a new thread. Returns the previous thread, which has ended;
  // the caller joins it after unlocking. Throws std::system_error if no
  // thread can start, or std::bad_alloc; then nothing has changed (the
  // previous thread is still here to be joined).
  std::thread StartLocked(std::function<void()> body);

  // Called by the thread as the last thing it does under the owner's mutex:
  // it no longer runs, and its Sleeper is gone.
  void EndedLocked() {
    running_ = false;
    sleeper_.reset();
  }

  // Interrupts the thread's current or next sleep, if it runs.
  void WakeLocked() {
    if (sleeper_) sleeper_->Wake();
  }

  // The thread object, for the owner to join after unlocking (on stop).
  std::thread TakeLocked() { return std::move(thread_); }

  // For the thread itself: its Sleeper (valid until EndedLocked).
  Sleeper& sleeper() { return *sleeper_; }

 private:
  Clock& clock_;
  bool running_ = false;
  std::unique_ptr<Sleeper> sleeper_;
  std::thread thread_;
};

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_INTERNAL_ON_DEMAND_THREAD_H_
