// SPDX-License-Identifier: Apache-2.0
// libevent 2.1's timers (a min-heap of struct event): event_add with a
// relative timeout, event_del, and event_base_loop(EVLOOP_ONCE) to fire.
// libevent has no settable or cached clock outside its loop: every
// event_add reads CLOCK_MONOTONIC itself, which is part of its cost.
#ifndef TICKWHEEL_BENCH_CORE_LIBEVENT_BACKEND_H_
#define TICKWHEEL_BENCH_CORE_LIBEVENT_BACKEND_H_

#include <event2/event.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "backend.h"
#include "fire_log.h"

namespace tickwheel::bench {

class LibeventBackend {
 public:
  // The flag per id saying its struct is initialized.
  static constexpr std::size_t kHarnessBytesPerTimer = 1;
  static constexpr const char* kName = "libevent";

  // The struct event of each timer (the caller's storage in libevent's API)
  // is counted as the timer's memory: allocated here, touched on Insert.
  LibeventBackend(std::size_t capacity, std::int64_t, Storage storage)
      : events_(static_cast<event*>(std::malloc(capacity * event_get_struct_event_size()))),
        assigned_(new bool[capacity]()) {
    if (storage == Storage::kPrefault && events_ != nullptr) {
      std::memset(static_cast<void*>(events_), 0, capacity * event_get_struct_event_size());
    }
    event_config* config = event_config_new();
    // Without it libevent reads CLOCK_MONOTONIC_COARSE and may fire up to a
    // coarse tick early relative to the precise clock.
    event_config_set_flag(config, EVENT_BASE_FLAG_PRECISE_TIMER);
    base_ = event_base_new_with_config(config);
    event_config_free(config);
    if (base_ == nullptr || events_ == nullptr) {
      throw std::runtime_error("libevent: event_base_new_with_config failed");
    }
  }
  ~LibeventBackend() {
    event_base_free(base_);
    std::free(events_);
  }

  void SetNow(std::int64_t now_ns) { now_ns_ = now_ns; }

  void Insert(std::uint32_t id, std::int64_t deadline_ns) {
    event* ev = Event(id);
    if (!assigned_[id]) {
      event_assign(ev, base_, -1, 0, &OnTimeout, ev);
      assigned_[id] = true;
    }
    Add(ev, deadline_ns);
  }
  // event_add on a pending event moves it in the heap.
  void Move(std::uint32_t id, std::int64_t deadline_ns) {
    Add(Event(id), deadline_ns);
  }
  void Cancel(std::uint32_t id) { event_del(Event(id)); }

  bool RunOnce(FireLog& log) {
    running_ = this;
    log_ = &log;
    const int r = event_base_loop(base_, EVLOOP_ONCE);
    running_ = nullptr;
    log_ = nullptr;
    return r == 0;
  }

 private:
  event* Event(std::uint32_t id) const {
    return reinterpret_cast<event*>(reinterpret_cast<char*>(events_) +
                                    std::size_t{id} * event_get_struct_event_size());
  }
  // libevent adds the relative timeout to its own clock read, taken after
  // `now_ns_` was but truncated to microseconds: one microsecond more keeps
  // the deadline it keeps from being earlier than ours.
  void Add(event* ev, std::int64_t deadline_ns) {
    std::int64_t delay = deadline_ns - now_ns_ + 1000;
    if (delay < 0) delay = 0;
    timeval tv;
    tv.tv_sec = static_cast<time_t>(delay / 1'000'000'000);
    tv.tv_usec = static_cast<suseconds_t>((delay % 1'000'000'000 + 999) / 1000);
    if (tv.tv_usec == 1'000'000) {
      ++tv.tv_sec;
      tv.tv_usec = 0;
    }
    event_add(ev, &tv);
  }
  static void OnTimeout(evutil_socket_t, short, void* arg) {
    LibeventBackend* self = running_;
    const auto id = static_cast<std::uint32_t>(
        (static_cast<char*>(arg) - reinterpret_cast<char*>(self->events_)) /
        static_cast<std::ptrdiff_t>(event_get_struct_event_size()));
    self->log_->Append(id);
  }

  event_base* base_ = nullptr;
  event* events_;
  std::unique_ptr<bool[]> assigned_;
  std::int64_t now_ns_ = 0;
  FireLog* log_ = nullptr;
  // The backend whose loop runs on this thread (the callback's argument is
  // the event itself, whose index is its id).
  static inline thread_local LibeventBackend* running_ = nullptr;
};

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_BENCH_CORE_LIBEVENT_BACKEND_H_
