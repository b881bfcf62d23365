// SPDX-License-Identifier: Apache-2.0
// libev's timers (a 4-ary heap with cached deadlines): ev_timer_start with
// a delay relative to the loop's cached time, which the harness refreshes
// with ev_now_update once per batch; ev_timer_again for a move (libev's
// recommended way to push back an idle timeout); ev_timer_stop;
// ev_run(EVRUN_ONCE) to fire.
#ifndef TICKWHEEL_BENCH_CORE_LIBEV_BACKEND_H_
#define TICKWHEEL_BENCH_CORE_LIBEV_BACKEND_H_

#include <ev.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "backend.h"
#include "fire_log.h"

namespace tickwheel::bench {

class LibevBackend {
 public:
  static constexpr const char* kName = "libev";

  // The ev_timer of each timer (the caller's storage in libev's API) is
  // counted as the timer's memory: allocated here, touched on Insert.
  static constexpr std::size_t kHarnessBytesPerTimer = 0;

  LibevBackend(std::size_t capacity, std::int64_t, Storage storage)
      : loop_(ev_loop_new(EVFLAG_AUTO)),
        timers_(static_cast<ev_timer*>(std::malloc(capacity * sizeof(ev_timer)))) {
    if (loop_ == nullptr || timers_ == nullptr) {
      throw std::runtime_error("libev: ev_loop_new failed");
    }
    if (storage == Storage::kPrefault) {
      std::memset(static_cast<void*>(timers_), 0, capacity * sizeof(ev_timer));
    }
    ev_set_userdata(loop_, this);
  }
  ~LibevBackend() {
    ev_loop_destroy(loop_);
    std::free(timers_);
  }

  // `now_ns` is read before ev_now_update, so the loop's time is never
  // behind it and a delay computed from it never fires early.
  void SetNow(std::int64_t now_ns) {
    now_ns_ = now_ns;
    ev_now_update(loop_);
  }

  void Insert(std::uint32_t id, std::int64_t deadline_ns) {
    ev_timer* w = &timers_[id];
    ev_timer_init(w, &OnTimeout, Delay(deadline_ns), 0.);
    ev_timer_start(loop_, w);
    ++pending_;
  }
  // Sets the repeat to the new delay and re-arms: one heap adjustment. The
  // callback clears the repeat, so the timer still fires once.
  void Move(std::uint32_t id, std::int64_t deadline_ns) {
    ev_timer* w = &timers_[id];
    w->repeat = Delay(deadline_ns);
    ev_timer_again(loop_, w);
  }
  void Cancel(std::uint32_t id) {
    ev_timer_stop(loop_, &timers_[id]);
    --pending_;
  }

  bool RunOnce(FireLog& log) {
    if (pending_ == 0) return false;
    log_ = &log;
    ev_run(loop_, EVRUN_ONCE);
    log_ = nullptr;
    return true;
  }

 private:
  // Seconds from the loop's time (never earlier than now_ns_), plus 1 ns
  // against rounding in the double arithmetic.
  double Delay(std::int64_t deadline_ns) const {
    std::int64_t delay = deadline_ns - now_ns_ + 1;
    if (delay < 0) delay = 0;
    return static_cast<double>(delay) * 1e-9;
  }
  static void OnTimeout(struct ev_loop* loop, ev_timer* w, int) {
    auto* self = static_cast<LibevBackend*>(ev_userdata(loop));
    if (w->repeat != 0.) {  // a moved timer: fire it once only
      w->repeat = 0.;
      ev_timer_stop(loop, w);
    }
    --self->pending_;
    self->log_->Append(static_cast<std::uint32_t>(w - self->timers_));
  }

  struct ev_loop* loop_;
  ev_timer* timers_;
  std::size_t pending_ = 0;
  std::int64_t now_ns_ = 0;
  FireLog* log_ = nullptr;
};

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_BENCH_CORE_LIBEV_BACKEND_H_
