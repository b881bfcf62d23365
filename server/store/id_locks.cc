// SPDX-License-Identifier: Apache-2.0
#include "store/id_locks.h"

namespace tickwheel::server {

IdLocks::Held IdLocks::Lock(std::vector<std::string> ids) {
  // A repeated id needs no care: its second insert finds the first (and
  // keeps its view), its second erase finds nothing.
  Held held;
  held.ids_ = std::move(ids);  // moving the vector keeps its strings in place
  internal::MutexLock lock(mutex_);
  while (AnyHeldLocked(held.ids_)) released_.Wait(mutex_);
  for (const std::string& id : held.ids_) held_.insert(id);
  return held;
}

void IdLocks::Unlock(Held& held) {
  {
    internal::MutexLock lock(mutex_);
    for (const std::string& id : held.ids_) held_.erase(id);
  }
  held.ids_.clear();
  released_.SignalAll();
}

bool IdLocks::AnyHeldLocked(const std::vector<std::string>& ids) const {
  for (const std::string& id : ids) {
    if (held_.contains(id)) return true;
  }
  return false;
}

}  // namespace tickwheel::server
