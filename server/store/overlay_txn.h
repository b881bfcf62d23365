// SPDX-License-Identifier: Apache-2.0
// OverlayTxn: the StoreTxn both stores give their mutations. Reads come
// from what the group's mutations wrote, else from the store (through the
// store's Load); writes stay in memory until the group commits, when the
// store turns the net changes into its own writes. A mutation runs between
// Begin and End, and End takes back all it did if it failed.
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

// One timer's net change in a group: as stored before it, and after it
// (nullopt: absent / deleted). Never both absent, never equal.
struct RecordChange {
  std::optional<TimerRecord> before;
  std::optional<TimerRecord> after;
};

// Thread safety: one thread (a store writer), for one group.
class OverlayTxn : public StoreTxn {
 public:
  Result<std::optional<TimerRecord>> Get(const std::string& id) override;
  void Put(const std::optional<TimerRecord>& before, const TimerRecord& after) override;
  void Erase(const TimerRecord& before) override;

  void Begin();
  // Keeps the mutation's writes if `status` is ok (and it wrote nothing it
  // must not have); otherwise takes them back. Returns the mutation's status.
  Status End(Status status);

  // The net changes of the mutations kept, in the order their timers were
  // first written.
  std::vector<RecordChange> Changes() const;

 protected:
  // The stored record of `id` (nullopt if none), or why it cannot be read.
  // Called at most once per id per group.
  virtual Result<std::optional<TimerRecord>> Load(const std::string& id) = 0;

 private:
  const Result<std::optional<TimerRecord>>& Stored(const std::string& id);
  void Set(const std::string& id, std::optional<TimerRecord> value);
  bool Writable(const std::string& id);

  std::unordered_map<std::string, Result<std::optional<TimerRecord>>> stored_;
  // This group's writes: the record, or nullopt once erased.
  std::unordered_map<std::string, std::optional<TimerRecord>> overlay_;
  std::vector<std::string> order_;  // ids in the order first written
  // The current mutation's overlay changes, to take back: (id, the entry
  // before, or nullopt if there was none).
  std::vector<std::pair<std::string, std::optional<std::optional<TimerRecord>>>> undo_;
  std::size_t order_at_begin_ = 0;
  Status violation_;
};

// What the changes do to the per-state counts.
StateCounts CountDelta(const std::vector<RecordChange>& changes);

// The changes to when timers are due, for the store's DueListener.
std::vector<std::pair<std::string, std::optional<std::int64_t>>> DueChanges(
    const std::vector<RecordChange>& changes);

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_STORE_OVERLAY_TXN_H_
