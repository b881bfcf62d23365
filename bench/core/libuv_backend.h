// SPDX-License-Identifier: Apache-2.0
// libuv's timers (a binary heap of uv_timer_t): uv_timer_start with a
// timeout in milliseconds relative to the loop's cached time, which the
// harness refreshes with uv_update_time once per batch; uv_timer_stop;
// uv_run with uv_stop from the expiry callback to fire.
#ifndef TICKWHEEL_BENCH_CORE_LIBUV_BACKEND_H_
#define TICKWHEEL_BENCH_CORE_LIBUV_BACKEND_H_

#include <uv.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "backend.h"
#include "fire_log.h"

namespace tickwheel::bench {

class LibuvBackend {
 public:
  // The flag per id saying its struct is initialized.
  static constexpr std::size_t kHarnessBytesPerTimer = 1;
  static constexpr const char* kName = "libuv";

  // The uv_timer_t of each timer (the caller's storage in libuv's API) is
  // counted as the timer's memory: allocated here, touched on Insert.
  LibuvBackend(std::size_t capacity, std::int64_t, Storage storage)
      : timers_(static_cast<uv_timer_t*>(std::malloc(capacity * sizeof(uv_timer_t)))),
        initialized_(new bool[capacity]()),
        capacity_(capacity) {
    if (storage == Storage::kPrefault && timers_ != nullptr) {
      std::memset(static_cast<void*>(timers_), 0, capacity * sizeof(uv_timer_t));
    }
    if (timers_ == nullptr || uv_loop_init(&loop_) != 0) {
      throw std::runtime_error("libuv: uv_loop_init failed");
    }
  }
  ~LibuvBackend() {
    for (std::size_t i = 0; i < capacity_; ++i) {
      if (initialized_[i]) uv_close(reinterpret_cast<uv_handle_t*>(&timers_[i]), nullptr);
    }
    uv_run(&loop_, UV_RUN_DEFAULT);
    uv_loop_close(&loop_);
    std::free(timers_);
  }

  // `now_ns` is read before uv_update_time, so the loop's time is never
  // behind it and a timeout computed from it never fires early.
  void SetNow(std::int64_t) { uv_update_time(&loop_); }

  void Insert(std::uint32_t id, std::int64_t deadline_ns) {
    uv_timer_t* t = &timers_[id];
    if (!initialized_[id]) {
      uv_timer_init(&loop_, t);
      t->data = this;
      initialized_[id] = true;
    }
    Start(t, deadline_ns);
  }
  // uv_timer_start on an active timer stops it first.
  void Move(std::uint32_t id, std::int64_t deadline_ns) {
    Start(&timers_[id], deadline_ns);
  }
  void Cancel(std::uint32_t id) { uv_timer_stop(&timers_[id]); }

  bool RunOnce(FireLog& log) {
    if (!uv_loop_alive(&loop_)) return false;
    log_ = &log;
    // UV_RUN_ONCE runs the timers already due and then still blocks until
    // the next one is due. Instead: the default mode, which blocks until a
    // timer is due, with every expiry calling uv_stop, so the loop returns
    // at the end of the turn that fired it.
    uv_run(&loop_, UV_RUN_DEFAULT);
    log_ = nullptr;
    return true;
  }

 private:
  // Timeouts are whole milliseconds from uv_now(), which is CLOCK_MONOTONIC
  // (possibly its coarse variant, never ahead) in milliseconds: rounded up,
  // the timer is due no earlier than `deadline_ns`.
  void Start(uv_timer_t* t, std::int64_t deadline_ns) {
    const std::int64_t now_ns = static_cast<std::int64_t>(uv_now(&loop_)) * 1'000'000;
    std::int64_t delay = deadline_ns - now_ns;
    if (delay < 0) delay = 0;
    uv_timer_start(t, &OnTimeout,
                   static_cast<std::uint64_t>((delay + 999'999) / 1'000'000), 0);
  }
  static void OnTimeout(uv_timer_t* t) {
    auto* self = static_cast<LibuvBackend*>(t->data);
    self->log_->Append(static_cast<std::uint32_t>(t - self->timers_));
    uv_stop(&self->loop_);
  }

  uv_loop_t loop_;
  uv_timer_t* timers_;
  std::unique_ptr<bool[]> initialized_;
  std::size_t capacity_;
  FireLog* log_ = nullptr;
};

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_BENCH_CORE_LIBUV_BACKEND_H_
