// SPDX-License-Identifier: Apache-2.0
#include "flow/flow_budget.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace tickwheel::server {
namespace {

// `units` whole units over `weights` in proportion, largest remainders
// first (ties: the earlier index, the smaller node id).
std::vector<std::int64_t> Apportion(std::int64_t units, const std::vector<std::int64_t>& weights) {
  std::vector<std::int64_t> out(weights.size(), 0);
  const double total = static_cast<double>(std::accumulate(weights.begin(), weights.end(), std::int64_t{0}));
  if (units <= 0 || total <= 0) return out;
  std::vector<std::pair<double, std::size_t>> remainders;
  std::int64_t given = 0;
  for (std::size_t i = 0; i < weights.size(); ++i) {
    const double exact = static_cast<double>(units) * static_cast<double>(weights[i]) / total;
    out[i] = static_cast<std::int64_t>(std::floor(exact));
    given += out[i];
    if (weights[i] > 0) remainders.emplace_back(exact - static_cast<double>(out[i]), i);
  }
  std::stable_sort(remainders.begin(), remainders.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (std::size_t k = 0; given < units && k < remainders.size(); ++k, ++given) {
    ++out[remainders[k].second];
  }
  return out;
}

}  // namespace

std::map<std::string, FlowLimits> SplitBudget(const FlowLimits& limits,
                                              const std::vector<NodeDemand>& nodes) {
  std::vector<NodeDemand> sorted = nodes;
  std::sort(sorted.begin(), sorted.end(),
            [](const NodeDemand& a, const NodeDemand& b) { return a.node < b.node; });
  std::vector<std::int64_t> weights;
  for (const NodeDemand& n : sorted) weights.push_back(limits.paused ? 0 : std::max<std::int64_t>(0, n.demand));
  std::map<std::string, FlowLimits> out;
  for (const NodeDemand& n : sorted) {
    FlowLimits& l = out[n.node];
    l.paused = limits.paused;
    if (limits.rate_limited()) {
      l.rate_per_s = 0;
      l.burst = 0;
    }
    if (limits.capped()) l.max_in_flight = 0;
  }
  if (limits.capped()) {
    const std::vector<std::int64_t> caps = Apportion(limits.max_in_flight, weights);
    for (std::size_t i = 0; i < sorted.size(); ++i) out[sorted[i].node].max_in_flight = caps[i];
  }
  if (limits.rate_limited()) {
    const auto burst_units = static_cast<std::int64_t>(std::floor(limits.burst));
    const std::vector<std::int64_t> bursts = Apportion(burst_units, weights);
    double with_burst = 0;
    for (std::size_t i = 0; i < sorted.size(); ++i) {
      if (bursts[i] > 0) with_burst += static_cast<double>(weights[i]);
    }
    for (std::size_t i = 0; i < sorted.size(); ++i) {
      FlowLimits& l = out[sorted[i].node];
      l.burst = static_cast<double>(bursts[i]);
      if (bursts[i] > 0 && with_burst > 0) {
        l.rate_per_s = limits.rate_per_s * static_cast<double>(weights[i]) / with_burst;
      }
    }
  }
  return out;
}

ShareStep StepShare(const FlowLimits& limits, const FlowLimits& target, const FlowLimits& others,
                    std::int64_t in_flight) {
  ShareStep step;
  step.use.paused = step.record.paused = limits.paused;
  if (limits.rate_limited()) {
    // Growth only into what the others leave; shrinking at once.
    const double free_rate = std::max(0.0, limits.rate_per_s - others.rate_per_s);
    const double free_burst = std::max(0.0, std::floor(limits.burst) - others.burst);
    double rate = std::min(target.rate_per_s, free_rate);
    double burst = std::min(target.burst, free_burst);
    if (burst < 1) {  // no token: no rate either
      burst = 0;
      rate = 0;
    }
    step.use.rate_per_s = step.record.rate_per_s = rate;
    step.use.burst = step.record.burst = burst;
  }
  if (limits.capped()) {
    const std::int64_t free = std::max<std::int64_t>(0, limits.max_in_flight - others.max_in_flight);
    const std::int64_t cap = std::min(target.max_in_flight, free);
    step.use.max_in_flight = cap;
    step.record.max_in_flight = std::max(cap, in_flight);
  }
  return step;
}

}  // namespace tickwheel::server
