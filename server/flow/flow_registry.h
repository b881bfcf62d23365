// SPDX-License-Identifier: Apache-2.0
// FlowRegistry: every node's view of the flows' settings (as stored, and
// refreshed from the store every second), the server's defaults, and the
// Retry-After holds other nodes reported (cluster).
#ifndef TICKWHEEL_SERVER_FLOW_FLOW_REGISTRY_H_
#define TICKWHEEL_SERVER_FLOW_FLOW_REGISTRY_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "flow/flow_limits.h"
#include "flow/flow_settings.h"
#include "tickwheel/internal/mutex.h"

namespace tickwheel::server {

// Thread safety: every method may be called from any thread. Readers of
// many flows compare version() to see whether anything changed.
//
//   FlowRegistry flows({.rate_per_s = 100});
//   flows.Set("payments-api", settings);      // after the store wrote it
//   FlowLimits l = flows.Limits("payments-api");
class FlowRegistry {
 public:
  explicit FlowRegistry(FlowDefaults defaults = {}) : defaults_(defaults) {}

  const FlowDefaults& defaults() const { return defaults_; }

  // A refresh: the settings of every configured flow as a read of the store
  // found them, a read that started when sets() was `read_from`. A flow this
  // node Set since then keeps what Set gave it: the read may predate that
  // write (it is newer, or as new). A change of any flow bumps the version.
  void Replace(std::map<std::string, FlowSettings> all, std::uint64_t read_from);
  // One flow's settings were written (or deleted: nullopt) by this node.
  void Set(const std::string& flow, std::optional<FlowSettings> settings);
  // How many Sets so far: taken before a refresh's read, for Replace.
  std::uint64_t sets() const;

  std::optional<FlowSettings> Settings(const std::string& flow) const;
  std::map<std::string, FlowSettings> All() const;
  bool Configured(const std::string& flow) const;
  // Its settings resolved with the defaults.
  FlowLimits Limits(const std::string& flow) const;

  // Holds (Retry-After) by wall-clock Unix ms: nothing of the flow starts
  // before. Replace: what the cluster's table says now (holds ended by
  // `now_ms` are dropped); Hold: one this node learnt (kept if later than
  // what it has).
  void ReplaceHolds(std::map<std::string, std::int64_t> until_ms, std::int64_t now_ms);
  void Hold(const std::string& flow, std::int64_t until_ms);
  std::map<std::string, std::int64_t> Holds() const;

  // Changes with every change of settings or holds.
  std::uint64_t version() const { return version_.load(std::memory_order_acquire); }

 private:
  const FlowDefaults defaults_;
  mutable internal::Mutex mutex_;
  std::map<std::string, FlowSettings> settings_ TW_GUARDED_BY(mutex_);
  std::map<std::string, std::int64_t> holds_ TW_GUARDED_BY(mutex_);
  std::uint64_t sets_ TW_GUARDED_BY(mutex_) = 0;
  // The flows Set since the oldest refresh that may still Replace: which
  // Set (by sets_) wrote each last.
  std::map<std::string, std::uint64_t> set_at_ TW_GUARDED_BY(mutex_);
  std::atomic<std::uint64_t> version_{1};
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_FLOW_FLOW_REGISTRY_H_
