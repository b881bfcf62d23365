// SPDX-License-Identifier: Apache-2.0
// PgPool: the PostgreSQL store's idle connections, and WithConnection, which
// runs one statement or one transaction on a pooled connection.
#ifndef TICKWHEEL_SERVER_STORE_PG_POOL_H_
#define TICKWHEEL_SERVER_STORE_PG_POOL_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "store/pg_connection.h"
#include "tickwheel/internal/mutex.h"

namespace tickwheel::server {

// Connections for the store's threads: taken for one statement or one
// transaction, given back if still healthy.
// Thread safety: Take, Give and Clear from any thread; a connection taken
// belongs to its taker until it gives it back.
// Cost: one lock per Take and Give; a new connection when none is idle.
class PgPool {
 public:
  explicit PgPool(std::string conninfo) : conninfo_(std::move(conninfo)) {}

  Result<std::unique_ptr<PgConnection>> Take();
  void Give(std::unique_ptr<PgConnection> c);
  void Clear();

 private:
  const std::string conninfo_;
  internal::Mutex mutex_;
  std::vector<std::unique_ptr<PgConnection>> idle_ TW_GUARDED_BY(mutex_);
};

// Runs `fn(connection)` on a pooled connection.
template <typename Fn>
auto WithConnection(PgPool& pool, Fn fn) -> decltype(fn(std::declval<PgConnection&>())) {
  Result<std::unique_ptr<PgConnection>> c = pool.Take();
  if (!c.ok()) return c.status();
  auto result = fn(**c);
  pool.Give(std::move(*c));
  return result;
}

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_STORE_PG_POOL_H_
