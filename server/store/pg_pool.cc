// SPDX-License-Identifier: Apache-2.0
#include "store/pg_pool.h"

namespace tickwheel::server {

Result<std::unique_ptr<PgConnection>> PgPool::Take() {
  {
    internal::MutexLock lock(mutex_);
    if (!idle_.empty()) {
      std::unique_ptr<PgConnection> c = std::move(idle_.back());
      idle_.pop_back();
      return c;
    }
  }
  return PgConnection::Connect(conninfo_);
}

void PgPool::Give(std::unique_ptr<PgConnection> c) {
  if (!c || !c->healthy()) return;
  internal::MutexLock lock(mutex_);
  idle_.push_back(std::move(c));
}

void PgPool::Clear() {
  internal::MutexLock lock(mutex_);
  idle_.clear();
}

}  // namespace tickwheel::server
