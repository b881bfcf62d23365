// SPDX-License-Identifier: Apache-2.0
#include "flow/flow_gate.h"

#include <algorithm>
#include <cmath>

namespace tickwheel::server {

FlowGate::FlowGate(FlowRegistry* flows, Options options)
    : registry_(flows), options_(options) {}

FlowLimits FlowGate::GateLimits(const Flow& flow) const {
  if (!options_.shared_budget || !flow.limits.limited()) return flow.limits;
  FlowLimits gate;
  if (flow.share) {
    gate = *flow.share;
  } else {  // no share of the budget yet: nothing may start
    gate.rate_per_s = flow.limits.rate_limited() ? 0 : kNoRateLimit;
    gate.burst = 0;
    gate.max_in_flight = flow.limits.capped() ? 0 : kNoCap;
  }
  gate.paused = flow.limits.paused;
  return gate;
}

void FlowGate::Apply(Flow& flow, TimePoint now) {
  const FlowLimits gate = GateLimits(flow);
  if (gate != flow.limiter.limits()) flow.limiter.SetLimits(gate, now);
  if (!flow.waiting.empty()) MarkRunnable(flow);
}

FlowGate::Flow& FlowGate::Intern(const std::string& key, TimePoint now, std::int64_t now_ms) {
  auto it = flows_.find(key);
  if (it != flows_.end()) return *it->second;
  auto flow = std::make_unique<Flow>(key);
  flow->limits = registry_ ? registry_->Limits(key) : FlowLimits{};
  if (options_.shared_budget) flow->limiter.SetGroup(FlowLimiter::kClusterGroup);
  flow->limiter.SetLimits(GateLimits(*flow), now);  // starts its (empty) bucket
  if (registry_) {
    const auto holds = registry_->Holds();
    if (auto h = holds.find(key); h != holds.end()) ApplyHold(*flow, h->second, now, now_ms);
  }
  return *flows_.emplace(key, std::move(flow)).first->second;
}

void FlowGate::ApplyHold(Flow& flow, std::int64_t until_ms, TimePoint now, std::int64_t now_ms) {
  if (until_ms <= now_ms) return;
  const TimePoint until = now + std::chrono::milliseconds(until_ms - now_ms);
  if (until <= flow.limiter.held_until()) return;
  flow.limiter.HoldUntil(until);
  if (!flow.waiting.empty()) MarkRunnable(flow);
}

void FlowGate::Untime(Flow& flow) {
  if (flow.wake_at == TimePoint::max()) return;
  auto [lo, hi] = timed_.equal_range(flow.wake_at);
  for (auto t = lo; t != hi; ++t) {
    if (t->second == &flow) {
      timed_.erase(t);
      break;
    }
  }
  flow.wake_at = TimePoint::max();
}

FlowGate::Flow* FlowGate::Find(const std::string& key) {
  auto it = flows_.find(key);
  return it == flows_.end() ? nullptr : it->second.get();
}

std::size_t FlowGate::Quota(const Flow& flow) const {
  const FlowLimits& l = flow.limits;
  if (l.paused) return 0;
  std::size_t quota = std::max<std::size_t>(1, options_.window_cap / 4);
  if (l.rate_limited()) {
    const double soon = l.burst + std::ceil(l.rate_per_s * 2);
    quota = std::min(quota, std::max(kMinQuota, static_cast<std::size_t>(soon)));
  }
  if (l.capped()) {
    const auto four = static_cast<std::size_t>(std::min<std::int64_t>(l.max_in_flight, 1 << 28) * 4);
    quota = std::min(quota, std::max(kMinQuota, four));
  }
  return quota;
}

std::vector<FlowGate::Flow*> FlowGate::Sync(TimePoint now, std::int64_t now_ms) {
  std::vector<Flow*> shrunk;
  if (registry_ == nullptr) return shrunk;
  const std::uint64_t version = registry_->version();
  if (version == seen_version_) return shrunk;
  seen_version_ = version;
  for (auto& [key, flow] : flows_) {
    const std::size_t before = Quota(*flow);
    flow->limits = registry_->Limits(key);
    if (Quota(*flow) < before) shrunk.push_back(flow.get());
    Apply(*flow, now);
  }
  for (const auto& [key, until_ms] : registry_->Holds()) {
    if (Flow* flow = Find(key)) ApplyHold(*flow, until_ms, now, now_ms);
  }
  return shrunk;
}

void FlowGate::MarkRunnable(Flow& flow) {
  Untime(flow);
  if (flow.queued) return;
  flow.queued = true;
  runnable_.push_back(&flow);
}

void FlowGate::Ready(Flow& flow, const DueEntry& entry, std::int64_t since_ms, bool held) {
  flow.waiting.insert_or_assign(entry, Item{since_ms, held, round_});
  MarkRunnable(flow);
}

bool FlowGate::Unready(Flow& flow, const DueEntry& entry) {
  return flow.waiting.erase(entry) > 0;
}

TimePoint FlowGate::Release(TimePoint now, std::int64_t now_ms, std::vector<ReleasedEntry>& out) {
  while (!timed_.empty() && timed_.begin()->first <= now) {
    Flow* flow = timed_.begin()->second;
    timed_.erase(timed_.begin());
    flow->wake_at = TimePoint::max();
    MarkRunnable(*flow);
  }
  while (!runnable_.empty()) {
    Flow& flow = *runnable_.front();
    runnable_.pop_front();
    flow.queued = false;
    if (flow.share && now >= flow.share_until) {  // not renewed in time: not ours now
      flow.share.reset();
      Apply(flow, now);
    }
    if (flow.waiting.empty()) continue;
    std::size_t want = std::min(flow.waiting.size(), kChunk);
    if (!flow.limiter.limits().capped()) {
      want = std::min<std::size_t>(
          want, static_cast<std::size_t>(
                    std::max<std::int64_t>(0, kFairInFlight - flow.limiter.in_flight())));
    }
    const std::size_t n = want > 0 ? flow.limiter.Acquire(now, want) : 0;
    std::size_t throttled = 0;
    for (std::size_t i = 0; i < n; ++i) {
      auto it = flow.waiting.begin();
      const Item& item = it->second;
      const bool waited = item.held || item.round != round_;
      ReleasedEntry r{it->first, waited ? std::max<std::int64_t>(0, now_ms - item.since_ms) : 0};
      r.entry.flow = flow.key;
      throttled += waited ? 1 : 0;
      out.push_back(std::move(r));
      flow.waiting.erase(it);
    }
    if (n > 0) {
      flow.sent_1m.Add(now_ms, static_cast<std::int64_t>(n));
      flow.sent_total += n;
      if (throttled > 0) {
        flow.throttled_1m.Add(now_ms, static_cast<std::int64_t>(throttled));
        flow.throttled_total += throttled;
      }
    }
    if (flow.waiting.empty()) continue;
    if (n == kChunk) {  // more may go: after the others' turn
      MarkRunnable(flow);
      continue;
    }
    // Blocked: by its limiter (tokens, a hold: a time; a slot, a pause, no
    // share: an event), or by the fairness cap (an Ended).
    TimePoint next = want == 0 ? TimePoint::max() : flow.limiter.NextAt(now);
    if (next <= now) next = now + std::chrono::milliseconds(1);  // never spin
    if (next != TimePoint::max()) {
      flow.wake_at = next;
      timed_.emplace(next, &flow);
    }
  }
  ++round_;
  return timed_.empty() ? TimePoint::max() : timed_.begin()->first;
}

void FlowGate::Ended(Flow& flow, const FlowSignal& signal, TimePoint now, std::int64_t now_ms) {
  flow.limiter.Release(1);
  if (signal.delivered) {
    flow.delivered_1m.Add(now_ms, 1);
    ++flow.delivered_total;
  }
  if (signal.too_many_requests) flow.limiter.OnTooManyRequests(now);
  if (signal.retry_after_ms > 0) {
    flow.limiter.HoldUntil(now + std::chrono::milliseconds(signal.retry_after_ms));
    if (registry_) registry_->Hold(flow.key, now_ms + signal.retry_after_ms);
  }
  if (!flow.waiting.empty()) MarkRunnable(flow);
}

void FlowGate::SetShare(const std::string& key, std::optional<FlowLimits> share, TimePoint until,
                        TimePoint now, std::int64_t now_ms) {
  Flow* flow = Find(key);
  if (flow == nullptr) {
    if (!share) return;
    flow = &Intern(key, now, now_ms);
  }
  flow->share = share;
  flow->share_until = until;
  Apply(*flow, now);
}

std::vector<FlowStats> FlowGate::Stats(TimePoint now, std::int64_t now_ms) {
  std::vector<FlowStats> out;
  out.reserve(flows_.size());
  for (auto& [key, flow] : flows_) {
    FlowStats s;
    s.key = key;
    s.limits = flow->limits;
    s.gate = flow->limiter.limits();
    s.has_share = flow->share.has_value();
    s.waiting = static_cast<std::int64_t>(flow->waiting.size());
    s.in_flight = flow->limiter.in_flight();
    s.loaded = static_cast<std::int64_t>(flow->loaded);
    s.deferred = flow->deferred.has_value() || flow->refilling;
    s.sent_last_minute = flow->sent_1m.Sum(now_ms);
    s.delivered_last_minute = flow->delivered_1m.Sum(now_ms);
    s.throttled_last_minute = flow->throttled_1m.Sum(now_ms);
    s.sent_total = flow->sent_total;
    s.delivered_total = flow->delivered_total;
    s.throttled_total = flow->throttled_total;
    s.lowered_rate = flow->limiter.lowered_rate(now);
    if (flow->limiter.held_until() > now) {
      s.held_until_ms = now_ms + std::chrono::duration_cast<std::chrono::milliseconds>(
                                     flow->limiter.held_until() - now)
                                     .count();
    }
    s.demand = s.waiting + s.in_flight +
               (s.deferred ? static_cast<std::int64_t>(Quota(*flow)) : 0);
    out.push_back(std::move(s));
  }
  return out;
}

void FlowGate::Collect(std::int64_t now_ms) {
  for (auto it = flows_.begin(); it != flows_.end();) {
    Flow& f = *it->second;
    const bool idle = f.loaded == 0 && f.waiting.empty() && f.limiter.in_flight() == 0 &&
                      !f.deferred && !f.refilling && !f.queued && !f.share &&
                      f.sent_1m.Idle(now_ms) && !(registry_ && registry_->Configured(f.key));
    if (!idle) {
      ++it;
      continue;
    }
    Untime(f);
    retired_.sent_total += f.sent_total;
    retired_.delivered_total += f.delivered_total;
    retired_.throttled_total += f.throttled_total;
    it = flows_.erase(it);
  }
}

}  // namespace tickwheel::server
