// SPDX-License-Identifier: Apache-2.0
#include "delivery/connection_budget.h"

namespace tickwheel::server {

void ConnectionBudget::SetReclaim(std::function<void()> reclaim) { reclaim_ = std::move(reclaim); }

bool ConnectionBudget::Acquire(std::function<void()> granted) {
  {
    internal::MutexLock lock(mutex_);
    if (in_use_ < limit_ && line_.empty()) {
      ++in_use_;
      return true;
    }
    line_.push_back(std::move(granted));
    ++waited_;
  }
  if (reclaim_) reclaim_();
  return false;
}

void ConnectionBudget::Release() {
  std::function<void()> next;
  {
    internal::MutexLock lock(mutex_);
    if (line_.empty()) {
      if (in_use_ > 0) --in_use_;
      return;
    }
    // The slot passes to the first in line: in_use_ stays.
    next = std::move(line_.front());
    line_.pop_front();
  }
  next();
}

void ConnectionBudget::Clear() {
  std::deque<std::function<void()>> dropped;
  internal::MutexLock lock(mutex_);
  dropped.swap(line_);
  lock.Unlock();
}

std::size_t ConnectionBudget::in_use() const {
  internal::MutexLock lock(mutex_);
  return in_use_;
}

std::size_t ConnectionBudget::waiting() const {
  internal::MutexLock lock(mutex_);
  return line_.size();
}

std::uint64_t ConnectionBudget::waited() const {
  internal::MutexLock lock(mutex_);
  return waited_;
}

}  // namespace tickwheel::server
