// SPDX-License-Identifier: Apache-2.0
#include "flow/flow_registry.h"

namespace tickwheel::server {

void FlowRegistry::Replace(std::map<std::string, FlowSettings> all, std::uint64_t read_from) {
  internal::MutexLock lock(mutex_);
  for (auto it = set_at_.begin(); it != set_at_.end();) {
    const std::string& flow = it->first;
    if (it->second <= read_from) {  // the read saw that Set's write
      it = set_at_.erase(it);
      continue;
    }
    if (auto mine = settings_.find(flow); mine != settings_.end()) {
      all[flow] = mine->second;
    } else {
      all.erase(flow);
    }
    ++it;
  }
  if (all == settings_) return;
  settings_ = std::move(all);
  version_.fetch_add(1, std::memory_order_acq_rel);
}

void FlowRegistry::Set(const std::string& flow, std::optional<FlowSettings> settings) {
  internal::MutexLock lock(mutex_);
  if (settings) {
    settings_[flow] = *settings;
  } else {
    settings_.erase(flow);
  }
  set_at_[flow] = ++sets_;
  version_.fetch_add(1, std::memory_order_acq_rel);
}

std::uint64_t FlowRegistry::sets() const {
  internal::MutexLock lock(mutex_);
  return sets_;
}

std::optional<FlowSettings> FlowRegistry::Settings(const std::string& flow) const {
  internal::MutexLock lock(mutex_);
  auto it = settings_.find(flow);
  if (it == settings_.end()) return std::nullopt;
  return it->second;
}

std::map<std::string, FlowSettings> FlowRegistry::All() const {
  internal::MutexLock lock(mutex_);
  return settings_;
}

bool FlowRegistry::Configured(const std::string& flow) const {
  internal::MutexLock lock(mutex_);
  return settings_.count(flow) > 0;
}

FlowLimits FlowRegistry::Limits(const std::string& flow) const {
  internal::MutexLock lock(mutex_);
  auto it = settings_.find(flow);
  return ResolveLimits(it == settings_.end() ? nullptr : &it->second, defaults_);
}

void FlowRegistry::ReplaceHolds(std::map<std::string, std::int64_t> until_ms,
                                std::int64_t now_ms) {
  internal::MutexLock lock(mutex_);
  // A hold this node learnt and has not seen in the table yet is kept.
  for (const auto& [flow, until] : holds_) {
    auto [it, inserted] = until_ms.emplace(flow, until);
    if (!inserted && it->second < until) it->second = until;
  }
  std::erase_if(until_ms, [&](const auto& kv) { return kv.second <= now_ms; });
  if (until_ms == holds_) return;
  holds_ = std::move(until_ms);
  version_.fetch_add(1, std::memory_order_acq_rel);
}

void FlowRegistry::Hold(const std::string& flow, std::int64_t until_ms) {
  internal::MutexLock lock(mutex_);
  std::int64_t& held = holds_[flow];
  if (until_ms <= held) return;
  held = until_ms;
  version_.fetch_add(1, std::memory_order_acq_rel);
}

std::map<std::string, std::int64_t> FlowRegistry::Holds() const {
  internal::MutexLock lock(mutex_);
  return holds_;
}

}  // namespace tickwheel::server
