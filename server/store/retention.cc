#include "store/retention.h"

#include <algorithm>
#include <future>

#include "wall_clock.h"

namespace tickwheel::server {

Retention::Retention(TimerStore& store, std::chrono::milliseconds keep)
    : store_(store), keep_(keep) {}

Retention::~Retention() { Stop(); }

std::size_t Retention::PurgeOnce(std::int64_t now_ms) {
  constexpr std::size_t kPerWrite = 1000;
  const std::int64_t cutoff = now_ms - keep_.count();
  std::size_t deleted = 0;
  for (TimerState state : {TimerState::kDelivered, TimerState::kCancelled}) {
    for (;;) {
      std::vector<std::string> ids = store_.FinishedBefore(state, cutoff, kPerWrite);
      if (ids.empty()) break;
      auto count = std::make_shared<std::size_t>(0);
      std::promise<Status> written;
      const bool last = ids.size() < kPerWrite;
      store_.Submit(
          ids,
          [ids, state, cutoff, count](StoreTxn& txn) {
            for (const std::string& id : ids) {
              std::optional<TimerRecord> r = txn.Get(id);
              // Re-checked under the timer's lock: it may have changed.
              if (r && r->state == state && r->updated_ms < cutoff) {
                txn.Erase(*r);
                ++*count;
              }
            }
          },
          [&written](const Status& s) { written.set_value(s); },
          /*sync=*/false);
      if (!written.get_future().get().ok()) return deleted;
      deleted += *count;
      if (last || *count == 0) break;
    }
  }
  return deleted;
}

void Retention::Start() {
  thread_ = std::thread([this] {
    const auto interval = std::min<std::chrono::milliseconds>(
        std::max<std::chrono::milliseconds>(keep_ / 2, std::chrono::milliseconds(10)),
        std::chrono::minutes(1));
    std::unique_lock lock(mutex_);
    while (!stop_) {
      lock.unlock();
      PurgeOnce(WallNowMs());
      lock.lock();
      cv_.wait_for(lock, interval, [&] { return stop_; });
    }
  });
}

void Retention::Stop() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace tickwheel::server
