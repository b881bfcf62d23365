// SPDX-License-Identifier: Apache-2.0
// Boost.Asio's steady_timer (a heap of timers per io_context): expires_at
// with an absolute time plus async_wait, cancel, and io_context::run_one to
// fire. A cancel or a move completes the old wait with operation_aborted,
// a handler the io_context must run: the harness runs them (poll) once per
// batch, as a real loop would, and counts that time.
#ifndef TICKWHEEL_BENCH_CORE_ASIO_BACKEND_H_
#define TICKWHEEL_BENCH_CORE_ASIO_BACKEND_H_

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

#include "backend.h"
#include "fire_log.h"

namespace tickwheel::bench {

class AsioBackend {
 public:
  // The flag per id saying its struct is initialized.
  static constexpr std::size_t kHarnessBytesPerTimer = 1;
  static constexpr const char* kName = "asio";
  using Timer = boost::asio::steady_timer;

  // The steady_timer objects (the caller's storage in Asio's API) are
  // counted as the timers' memory: allocated here, touched on Insert.
  AsioBackend(std::size_t capacity, std::int64_t, Storage storage)
      : io_(1),
        timers_(static_cast<Timer*>(std::malloc(capacity * sizeof(Timer)))),
        constructed_(new bool[capacity]()),
        capacity_(capacity) {
    if (timers_ == nullptr) throw std::bad_alloc();
    if (storage == Storage::kPrefault) {
      std::memset(static_cast<void*>(timers_), 0, capacity * sizeof(Timer));
    }
  }
  ~AsioBackend() {
    for (std::size_t i = 0; i < capacity_; ++i) {
      if (constructed_[i]) timers_[i].~Timer();
    }
    std::free(timers_);
  }

  // Runs the handlers of cancelled and moved waits.
  void SetNow(std::int64_t) {
    if (aborted_ > 0) {
      io_.poll();
      io_.restart();
      aborted_ = 0;
    }
  }

  void Insert(std::uint32_t id, std::int64_t deadline_ns) {
    if (!constructed_[id]) {
      new (&timers_[id]) Timer(io_);
      constructed_[id] = true;
    }
    Wait(id, deadline_ns);
    ++pending_;
  }
  // expires_at cancels the pending wait; a new wait takes its place.
  void Move(std::uint32_t id, std::int64_t deadline_ns) {
    aborted_ += timers_[id].expires_at(At(deadline_ns));
    timers_[id].async_wait(Handler{this, id});
  }
  void Cancel(std::uint32_t id) {
    aborted_ += timers_[id].cancel();
    --pending_;
  }

  bool RunOnce(FireLog& log) {
    if (pending_ == 0) return false;
    log_ = &log;
    io_.run_one();
    io_.poll();
    if (io_.stopped()) io_.restart();
    log_ = nullptr;
    return true;
  }

 private:
  struct Handler {
    AsioBackend* self;
    std::uint32_t id;
    void operator()(const boost::system::error_code& ec) const {
      if (ec) return;  // operation_aborted: a cancel or a move
      --self->pending_;
      // Outside RunOnce only the far deadlines of fill/move/cancel can come
      // due (in a run longer than a second); those workloads log nothing.
      if (self->log_ != nullptr) self->log_->Append(id);
    }
  };
  static Timer::time_point At(std::int64_t ns) {
    return Timer::time_point(std::chrono::nanoseconds(ns));
  }
  void Wait(std::uint32_t id, std::int64_t deadline_ns) {
    timers_[id].expires_at(At(deadline_ns));
    timers_[id].async_wait(Handler{this, id});
  }

  boost::asio::io_context io_;
  Timer* timers_;
  std::unique_ptr<bool[]> constructed_;
  std::size_t capacity_;
  std::size_t pending_ = 0;
  std::size_t aborted_ = 0;
  FireLog* log_ = nullptr;
};

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_BENCH_CORE_ASIO_BACKEND_H_
