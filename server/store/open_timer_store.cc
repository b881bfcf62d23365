// SPDX-License-Identifier: Apache-2.0
// OpenTimerStore: the one place that knows which stores exist.
#include "store/postgres_timer_store.h"
#include "store/rocksdb_timer_store.h"
#include "store/timer_store.h"

namespace tickwheel::server {

Result<std::unique_ptr<TimerStore>> OpenTimerStore(const StoreOptions& options) {
  if (!options.postgres.empty()) return OpenPostgresTimerStore(options);
  return OpenRocksDbTimerStore(options);
}

}  // namespace tickwheel::server
