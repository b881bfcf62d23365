// SPDX-License-Identifier: Apache-2.0
// OverlayTxn: the StoreTxn both stores give their mutations. Reads come
// from what the group's mutations wrote, else from the store (through the
// store's Load and LoadSchedule); writes stay in memory until the group
// commits, when the store turns the net changes into its own writes. A
// mutation runs between Begin and End, and End takes back all it did if it
// failed.
#ifndef TICKWHEEL_SERVER_STORE_OVERLAY_TXN_H_
#define TICKWHEEL_SERVER_STORE_OVERLAY_TXN_H_

#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "store/timer_store.h"

namespace tickwheel::server {

// One row's net change in a group: as stored before it, and after it
// (nullopt: absent / deleted). Never both absent, never equal.
template <typename Row>
struct RowChange {
  std::optional<Row> before;
  std::optional<Row> after;
};
using RecordChange = RowChange<TimerRecord>;
using ScheduleChange = RowChange<ScheduleRow>;

// The overlay of one kind of row (timers, schedules) over what is stored.
// Thread safety: one thread.
template <typename Row>
class RowOverlay {
 public:
  using Loaded = Result<std::optional<Row>>;

  // The stored row of `id`, loaded by `load(id)` the first time.
  template <typename Load>
  const Loaded& Stored(const std::string& id, Load&& load) {
    auto it = stored_.find(id);
    if (it == stored_.end()) it = stored_.emplace(id, load(id)).first;
    return it->second;
  }
  bool IsStored(const std::string& id) const { return stored_.count(id) > 0; }

  // The group's write of `id`, if any (nullopt inside: erased).
  const std::optional<Row>* Written(const std::string& id) const {
    auto it = written_.find(id);
    return it == written_.end() ? nullptr : &it->second;
  }

  void Set(const std::string& id, std::optional<Row> value) {
    auto it = written_.find(id);
    if (it == written_.end()) {
      undo_.emplace_back(id, std::nullopt);
      written_.emplace(id, std::move(value));
      order_.push_back(id);
    } else {
      undo_.emplace_back(id, std::move(it->second));
      it->second = std::move(value);
    }
  }

  void Begin() {
    undo_.clear();
    order_at_begin_ = order_.size();
  }

  void Undo() {
    for (auto it = undo_.rbegin(); it != undo_.rend(); ++it) {
      if (it->second) {
        written_[it->first] = std::move(*it->second);
      } else {
        written_.erase(it->first);
      }
    }
    order_.resize(order_at_begin_);
  }

  // The net changes, in the order their rows were first written, moved
  // out of the overlay (no row is copied): the overlay is empty after.
  std::vector<RowChange<Row>> TakeChanges() {
    std::vector<RowChange<Row>> out;
    out.reserve(order_.size());
    for (const std::string& id : order_) {
      std::optional<Row>& after = written_.at(id);
      std::optional<Row>& before = *stored_.at(id);
      if (before == after) continue;
      out.push_back({std::move(before), std::move(after)});
    }
    stored_.clear();
    written_.clear();
    order_.clear();
    undo_.clear();
    order_at_begin_ = 0;
    return out;
  }

 private:
  std::unordered_map<std::string, Loaded> stored_;
  // This group's writes: the row, or nullopt once erased.
  std::unordered_map<std::string, std::optional<Row>> written_;
  std::vector<std::string> order_;  // ids in the order first written
  // The current mutation's changes, to take back: (id, the entry before,
  // or nullopt if there was none).
  std::vector<std::pair<std::string, std::optional<std::optional<Row>>>> undo_;
  std::size_t order_at_begin_ = 0;
};

// Thread safety: one thread (a store writer), for one group.
class OverlayTxn : public StoreTxn {
 public:
  Result<std::optional<TimerRecord>> Get(const std::string& id) override;
  void Put(const std::optional<TimerRecord>& before, const TimerRecord& after) override;
  void Put(const std::optional<TimerRecord>& before, TimerRecord&& after) override;
  void Erase(const TimerRecord& before) override;
  Result<std::optional<ScheduleRow>> GetSchedule(const std::string& id) override;
  void PutSchedule(const std::optional<ScheduleRow>& before, const ScheduleRow& after) override;
  void EraseSchedule(const ScheduleRow& before) override;

  void Begin();
  // Keeps the mutation's writes if `status` is ok (and it wrote nothing it
  // must not have); otherwise takes them back. Returns the mutation's status.
  Status End(Status status);

  // The net changes of the mutations kept, in the order their rows were
  // first written, moved out: once the group's mutations are done. The
  // transaction holds nothing after.
  std::vector<RecordChange> TakeChanges() { return timers_.TakeChanges(); }
  std::vector<ScheduleChange> TakeScheduleChanges() { return schedules_.TakeChanges(); }

 protected:
  // The stored record of `id` (nullopt if none), or why it cannot be read.
  // Called at most once per id per group.
  virtual Result<std::optional<TimerRecord>> Load(const std::string& id) = 0;
  // The same for the schedule `id`.
  virtual Result<std::optional<ScheduleRow>> LoadSchedule(const std::string& id) = 0;
  // Whether `id` was loaded already (a Prefetch need not read it again).
  bool Loaded(const std::string& id) const { return timers_.IsStored(id); }

 private:
  const Result<std::optional<TimerRecord>>& Stored(const std::string& id);
  const Result<std::optional<ScheduleRow>>& StoredSchedule(const std::string& id);
  bool Writable(const std::string& id);
  bool WritableSchedule(const std::string& id);

  RowOverlay<TimerRecord> timers_;
  RowOverlay<ScheduleRow> schedules_;
  Status violation_;
};

// What the changes do to the per-state counts.
StateCounts CountDelta(const std::vector<RecordChange>& changes);
ScheduleCounts CountDelta(const std::vector<ScheduleChange>& changes);

// One change to when a timer is due, for the store's DueListener.
struct DueChange {
  std::string id;
  std::optional<std::int64_t> due_ms;  // nullopt: no longer scheduled
  std::string flow;
};
std::vector<DueChange> DueChanges(const std::vector<RecordChange>& changes);

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_STORE_OVERLAY_TXN_H_
