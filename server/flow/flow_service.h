// SPDX-License-Identifier: Apache-2.0
// FlowService: what the API does with flows (GET, PUT, DELETE, :pause,
// :resume, the list): settings written to the store and to this node's
// registry, and each flow's backlog and last minute.
#ifndef TICKWHEEL_SERVER_FLOW_FLOW_SERVICE_H_
#define TICKWHEEL_SERVER_FLOW_FLOW_SERVICE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/server_clock.h"
#include "common/status.h"
#include "flow/flow_registry.h"
#include "flow/flow_settings.h"
#include "store/timer_store.h"

namespace tickwheel::server {

// What the nodes are doing with a flow now (summed over the live nodes of
// a cluster).
struct FlowActivity {
  std::int64_t in_flight = 0;
  std::int64_t sent_last_minute = 0;
  std::int64_t delivered_last_minute = 0;
  std::int64_t throttled_last_minute = 0;
  double lowered_rate = 0;        // the lowest rate a node runs it at after 429s; 0: none
  std::int64_t held_until_ms = 0;  // a Retry-After hold; 0: none
};
using FlowActivitySource = std::function<Result<std::map<std::string, FlowActivity>>()>;

// One flow as the API shows it.
struct FlowView {
  std::string key;
  std::optional<FlowSettings> settings;  // nullopt: none stored, the defaults apply
  FlowLimits limits;                     // in force: the settings and the defaults
  // Due and waiting (due now or before, not in flight), counted up to
  // FlowService::kCountCap (`due_capped`: that many or more).
  std::int64_t due = 0;
  bool due_capped = false;
  FlowActivity activity;
};

struct FlowPage {
  std::vector<FlowView> flows;
  std::optional<std::string> next_after;  // set while there may be more
};

// Thread safety: every method may be called from any thread; each blocks
// on the store (never call one on an I/O thread).
class FlowService {
 public:
  static constexpr std::size_t kCountCap = 100'000;
  static constexpr std::size_t kMaxPage = 100;

  // `changed` is called after this node changed a flow's settings (the
  // scheduler looks at once rather than within the second).
  FlowService(TimerStore& store, FlowRegistry& registry, ServerClock& clock,
              FlowActivitySource activity, std::function<void()> changed);

  Result<FlowView> Get(const std::string& key) const;
  // Configured flows and those with activity, by key, after `after`.
  Result<FlowPage> List(const std::string& after, std::size_t limit) const;
  // PUT: replaces the flow's settings.
  Result<FlowView> Put(const std::string& key, FlowSettings settings);
  // DELETE: back to the defaults.
  Result<FlowView> Delete(const std::string& key);
  // :pause / :resume: only `paused` changes (a flow without settings gets
  // some, with the defaults for the rest).
  Result<FlowView> SetPaused(const std::string& key, bool paused);

  // An import's settings (docs/operations.md, Export and import): stored
  // as they are (their updated_ms kept) if the flow has none; otherwise the
  // stored ones are left as they are. Returns what was stored before
  // (nullopt: none, so `settings` are stored now); the caller compares.
  Result<std::optional<FlowSettings>> Adopt(const std::string& key, const FlowSettings& settings);

  // Reads every flow's settings from the store into the registry (every
  // second, and at start). Settings it cannot read are logged and skipped.
  Status Refresh();

 private:
  Result<FlowView> View(const std::string& key,
                        const std::map<std::string, FlowActivity>& activity) const;
  Result<FlowView> Change(const std::string& key, const TimerStore::FlowSettingsChange& change);

  TimerStore& store_;
  FlowRegistry& registry_;
  ServerClock& clock_;
  const FlowActivitySource activity_;
  const std::function<void()> changed_;
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_FLOW_FLOW_SERVICE_H_
