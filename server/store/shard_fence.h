// SPDX-License-Identifier: Apache-2.0
// ShardFence: what a cluster node knows of its shard leases, for the
// PostgreSQL store's fenced writes (store/timer_store.h, WriteOptions).
#ifndef TICKWHEEL_SERVER_STORE_SHARD_FENCE_H_
#define TICKWHEEL_SERVER_STORE_SHARD_FENCE_H_

#include <cstdint>
#include <optional>

namespace tickwheel::server {

// Thread safety: EpochOf may be called from any thread.
class ShardFence {
 public:
  virtual ~ShardFence() = default;
  // The epoch of this node's lease on `shard`, or nullopt if it holds none.
  // A fenced write commits only if the lease row still has this owner and
  // epoch and has not expired, by the database's clock, when it commits.
  virtual std::optional<std::int64_t> EpochOf(int shard) const = 0;
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_STORE_SHARD_FENCE_H_
