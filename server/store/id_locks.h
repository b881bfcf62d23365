// SPDX-License-Identifier: Apache-2.0
// IdLocks: exclusive locks on sets of ids (timers, schedule keys), each set
// taken at once. The store's writer threads hold a group's ids while they
// write it, so two groups that share an id never run together, and two
// that share none always can: a batch of 1,000 creates no longer waits for
// another batch it has nothing in common with (as it did with a fixed
// table of lock stripes, where 1,000 ids covered a quarter of them).
#ifndef TICKWHEEL_SERVER_STORE_ID_LOCKS_H_
#define TICKWHEEL_SERVER_STORE_ID_LOCKS_H_

#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "tickwheel/internal/mutex.h"

namespace tickwheel::server {

// Thread safety: Lock and Unlock from any thread. A set is taken whole
// (never a part of it while waiting for the rest), so callers never
// deadlock whatever their sets and order.
// Cost: one mutex and one hash-set insert per id to lock, one erase per
// id to unlock; an unlock wakes every waiter to look again.
class IdLocks {
 public:
  // The ids one Lock call holds, until Unlock(held). Ids may repeat.
  class Held {
   public:
    Held() = default;
    Held(Held&&) = default;
    Held& operator=(Held&&) = default;

   private:
    friend class IdLocks;
    std::vector<std::string> ids_;  // the set's views point into them (the first of a repeat)
  };

  // Blocks until no id of `ids` is held, then holds them all.
  Held Lock(std::vector<std::string> ids);
  // Releases what Lock returned.
  void Unlock(Held& held);

 private:
  bool AnyHeldLocked(const std::vector<std::string>& ids) const TW_REQUIRES(mutex_);

  internal::Mutex mutex_;
  internal::CondVar released_;
  std::unordered_set<std::string_view> held_ TW_GUARDED_BY(mutex_);
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_STORE_ID_LOCKS_H_
