// SPDX-License-Identifier: Apache-2.0
#include "store/overlay_txn.h"

namespace tickwheel::server {

const Result<std::optional<TimerRecord>>& OverlayTxn::Stored(const std::string& id) {
  auto it = stored_.find(id);
  if (it == stored_.end()) it = stored_.emplace(id, Load(id)).first;
  return it->second;
}

Result<std::optional<TimerRecord>> OverlayTxn::Get(const std::string& id) {
  if (auto it = overlay_.find(id); it != overlay_.end()) return it->second;
  return Stored(id);
}

bool OverlayTxn::Writable(const std::string& id) {
  // A record that could not be read is never overwritten.
  if (Stored(id).ok()) return true;
  violation_ = Status::Corrupt("timer \"" + id +
                               "\" has a record this server cannot read; it was not changed");
  return false;
}

void OverlayTxn::Set(const std::string& id, std::optional<TimerRecord> value) {
  auto it = overlay_.find(id);
  if (it == overlay_.end()) {
    undo_.emplace_back(id, std::nullopt);
    overlay_.emplace(id, std::move(value));
    order_.push_back(id);
  } else {
    undo_.emplace_back(id, std::move(it->second));
    it->second = std::move(value);
  }
}

void OverlayTxn::Put(const std::optional<TimerRecord>&, const TimerRecord& after) {
  if (Writable(after.id)) Set(after.id, after);
}

void OverlayTxn::Erase(const TimerRecord& before) {
  if (Writable(before.id)) Set(before.id, std::nullopt);
}

void OverlayTxn::Begin() {
  undo_.clear();
  order_at_begin_ = order_.size();
  violation_ = Status::Ok();
}

Status OverlayTxn::End(Status status) {
  if (status.ok() && !violation_.ok()) status = violation_;
  if (status.ok()) return status;
  for (auto it = undo_.rbegin(); it != undo_.rend(); ++it) {
    if (it->second) {
      overlay_[it->first] = std::move(*it->second);
    } else {
      overlay_.erase(it->first);
    }
  }
  order_.resize(order_at_begin_);
  return status;
}

std::vector<RecordChange> OverlayTxn::Changes() const {
  std::vector<RecordChange> out;
  out.reserve(order_.size());
  for (const std::string& id : order_) {
    const std::optional<TimerRecord>& after = overlay_.at(id);
    const std::optional<TimerRecord>& before = *stored_.at(id);
    if (before == after) continue;
    out.push_back({before, after});
  }
  return out;
}

StateCounts CountDelta(const std::vector<RecordChange>& changes) {
  StateCounts delta{};
  for (const RecordChange& c : changes) {
    if (c.before) --delta[static_cast<int>(c.before->state)];
    if (c.after) ++delta[static_cast<int>(c.after->state)];
  }
  return delta;
}

std::vector<std::pair<std::string, std::optional<std::int64_t>>> DueChanges(
    const std::vector<RecordChange>& changes) {
  std::vector<std::pair<std::string, std::optional<std::int64_t>>> out;
  for (const RecordChange& c : changes) {
    const bool was = c.before && IsScheduled(c.before->state);
    const bool is = c.after && IsScheduled(c.after->state);
    if (is && (!was || c.before->due_ms != c.after->due_ms)) {
      out.emplace_back(c.after->id, c.after->due_ms);
    } else if (was && !is) {
      out.emplace_back(c.before->id, std::nullopt);
    }
  }
  return out;
}

}  // namespace tickwheel::server
