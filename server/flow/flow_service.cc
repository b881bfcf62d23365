// SPDX-License-Identifier: Apache-2.0
#include "flow/flow_service.h"

#include <spdlog/spdlog.h>

#include <set>

namespace tickwheel::server {

FlowService::FlowService(TimerStore& store, FlowRegistry& registry, ServerClock& clock,
                         FlowActivitySource activity, std::function<void()> changed)
    : store_(store),
      registry_(registry),
      clock_(clock),
      activity_(std::move(activity)),
      changed_(std::move(changed)) {}

Status FlowService::Refresh() {
  // Taken before the read: what this node writes meanwhile is not undone.
  const std::uint64_t read_from = registry_.sets();
  Result<std::vector<std::pair<std::string, std::string>>> stored = store_.ListFlowSettings();
  if (!stored.ok()) return stored.status();
  std::map<std::string, FlowSettings> all;
  for (const auto& [key, bytes] : *stored) {
    Result<FlowSettings> s = DecodeFlowSettings(key, bytes);
    if (!s.ok()) {
      spdlog::error("{}", s.status().message());
      continue;
    }
    all.emplace(key, std::move(*s));
  }
  registry_.Replace(std::move(all), read_from);
  return Status::Ok();
}

Result<FlowView> FlowService::View(const std::string& key,
                                   const std::map<std::string, FlowActivity>& activity) const {
  FlowView v;
  v.key = key;
  v.settings = registry_.Settings(key);
  v.limits = registry_.Limits(key);
  if (auto it = activity.find(key); it != activity.end()) v.activity = it->second;
  Result<TimerStore::FlowCount> due = store_.CountFlowDue(key, clock_.WallMs() + 1, kCountCap);
  if (!due.ok()) return due.status();
  v.due_capped = due->at_least;
  // The due index holds the timers in flight too (delivering).
  v.due = std::max<std::int64_t>(0, due->count - (v.due_capped ? 0 : v.activity.in_flight));
  return v;
}

Result<FlowView> FlowService::Get(const std::string& key) const {
  Result<std::map<std::string, FlowActivity>> activity = activity_();
  if (!activity.ok()) return activity.status();
  return View(key, *activity);
}

Result<FlowPage> FlowService::List(const std::string& after, std::size_t limit) const {
  Result<std::map<std::string, FlowActivity>> activity = activity_();
  if (!activity.ok()) return activity.status();
  std::set<std::string> keys;
  for (const auto& [key, settings] : registry_.All()) keys.insert(key);
  for (const auto& [key, a] : *activity) keys.insert(key);
  FlowPage page;
  limit = std::clamp<std::size_t>(limit, 1, kMaxPage);
  for (auto it = keys.upper_bound(after); it != keys.end(); ++it) {
    if (page.flows.size() == limit) {
      page.next_after = page.flows.back().key;
      break;
    }
    Result<FlowView> v = View(*it, *activity);
    if (!v.ok()) return v.status();
    page.flows.push_back(std::move(*v));
  }
  return page;
}

Result<FlowView> FlowService::Change(const std::string& key,
                                     const TimerStore::FlowSettingsChange& change) {
  Result<std::optional<std::string>> stored = store_.UpdateFlowSettings(key, change);
  if (!stored.ok()) return stored.status();
  std::optional<FlowSettings> now;
  if (*stored) {
    Result<FlowSettings> s = DecodeFlowSettings(key, **stored);
    if (!s.ok()) return s.status();
    now = std::move(*s);
  }
  registry_.Set(key, now);
  if (changed_) changed_();
  return Get(key);
}

Result<FlowView> FlowService::Put(const std::string& key, FlowSettings settings) {
  settings.updated_ms = clock_.WallMs();
  const std::string bytes = EncodeFlowSettings(settings);
  return Change(key, [&](const std::optional<std::string>&) -> Result<std::optional<std::string>> {
    return std::optional<std::string>(bytes);
  });
}

Result<FlowView> FlowService::Delete(const std::string& key) {
  return Change(key, [](const std::optional<std::string>&) -> Result<std::optional<std::string>> {
    return std::optional<std::string>();
  });
}

Result<FlowView> FlowService::SetPaused(const std::string& key, bool paused) {
  const std::int64_t now_ms = clock_.WallMs();
  return Change(key, [&](const std::optional<std::string>& stored)
                         -> Result<std::optional<std::string>> {
    FlowSettings s;
    if (stored) {
      Result<FlowSettings> old = DecodeFlowSettings(key, *stored);
      if (!old.ok()) return old.status();
      s = std::move(*old);
    }
    s.paused = paused;
    s.updated_ms = now_ms;
    return std::optional<std::string>(EncodeFlowSettings(s));
  });
}

Result<std::optional<FlowSettings>> FlowService::Adopt(const std::string& key,
                                                        const FlowSettings& settings) {
  const std::string bytes = EncodeFlowSettings(settings);
  std::optional<FlowSettings> before;
  Result<FlowView> view = Change(key, [&](const std::optional<std::string>& stored)
                                          -> Result<std::optional<std::string>> {
    before.reset();  // the change may run again (a conflict between nodes)
    if (!stored) return std::optional<std::string>(bytes);
    Result<FlowSettings> old = DecodeFlowSettings(key, *stored);
    if (!old.ok()) return old.status();
    before = std::move(*old);
    return stored;
  });
  if (!view.ok()) return view.status();
  return before;
}

}  // namespace tickwheel::server
