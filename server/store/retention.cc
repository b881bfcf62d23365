// SPDX-License-Identifier: Apache-2.0
#include "store/retention.h"

#include <algorithm>
#include <future>

namespace tickwheel::server {

Retention::Retention(TimerStore& store, ServerClock& clock, std::chrono::milliseconds keep)
    : store_(store), clock_(clock), keep_(keep) {}

Retention::~Retention() { Stop(); }

std::size_t Retention::PurgeOnce() {
  constexpr std::size_t kPerWrite = 1000;
  const std::int64_t cutoff = clock_.WallMs() - keep_.count();
  std::size_t deleted = 0;
  for (TimerState state : {TimerState::kDelivered, TimerState::kCancelled}) {
    for (;;) {
      Result<std::vector<std::string>> ids = store_.FinishedBefore(state, cutoff, kPerWrite);
      if (!ids.ok() || ids->empty()) break;
      auto count = std::make_shared<std::size_t>(0);
      std::promise<Status> written;
      const bool last = ids->size() < kPerWrite;
      store_.Submit(
          *ids,
          [ids = *ids, state, cutoff, count](StoreTxn& txn) -> Status {
            *count = 0;  // the mutation may run again (a retried transaction)
            for (const std::string& id : ids) {
              Result<std::optional<TimerRecord>> r = txn.Get(id);
              if (!r.ok()) continue;  // unreadable: left alone
              // Re-checked under the timer's lock: it may have changed.
              if (*r && (*r)->state == state && (*r)->updated_ms < cutoff) {
                txn.Erase(**r);
                ++*count;
              }
            }
            return Status::Ok();
          },
          [&written](const Status& s) { written.set_value(s); }, WriteOptions{});
      if (!written.get_future().get().ok()) return deleted;
      deleted += *count;
      if (last || *count == 0) break;
    }
  }
  return deleted;
}

void Retention::Start() {
  const auto period = std::min<std::chrono::milliseconds>(
      std::max<std::chrono::milliseconds>(keep_ / 2, std::chrono::milliseconds(10)),
      std::chrono::minutes(1));
  sweeper_ = std::make_unique<internal::PeriodicThread>(clock_.steady(), period,
                                                        [this] { PurgeOnce(); });
}

void Retention::Stop() { sweeper_.reset(); }

}  // namespace tickwheel::server
