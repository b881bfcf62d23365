// SPDX-License-Identifier: Apache-2.0
#include "ledger.h"

#include <algorithm>
#include <map>
#include <set>

namespace tickwheel::soak {

std::string TimerId(std::uint64_t n) {
  std::string id(1, 't');
  return id += std::to_string(n);
}

std::int64_t TimerIndex(const std::string& id) {
  if (id.size() < 2 || id[0] != 't' || id.size() > 19) return -1;
  std::int64_t n = 0;
  for (std::size_t i = 1; i < id.size(); ++i) {
    if (id[i] < '0' || id[i] > '9') return -1;
    n = n * 10 + (id[i] - '0');
  }
  return n;
}

double Percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const auto at = static_cast<std::size_t>(q * static_cast<double>(sorted.size() - 1) + 0.5);
  return sorted[std::min(at, sorted.size() - 1)];
}

std::uint64_t Ledger::NewTimer() {
  std::lock_guard lock(mutex_);
  facts_.emplace_back();
  return facts_.size() - 1;
}

void Ledger::Created(std::uint64_t n, std::int64_t fire_ms) {
  std::lock_guard lock(mutex_);
  Facts& f = facts_[n];
  f.create = Create::kAcked;
  f.fire_ms = f.min_fire_ms = f.max_fire_ms = fire_ms;
}

void Ledger::CreateUncertain(std::uint64_t n) {
  std::lock_guard lock(mutex_);
  facts_[n].create = Create::kUncertain;
}

void Ledger::Rescheduled(std::uint64_t n, std::int64_t fire_ms) {
  std::lock_guard lock(mutex_);
  Facts& f = facts_[n];
  f.fire_ms = f.min_fire_ms = f.max_fire_ms = fire_ms;
  ++rescheduled_;
}

void Ledger::RescheduleUncertain(std::uint64_t n, std::int64_t fire_ms) {
  std::lock_guard lock(mutex_);
  Facts& f = facts_[n];
  f.uncertain_reschedule = true;
  f.min_fire_ms = std::min(f.min_fire_ms, fire_ms);
  f.max_fire_ms = std::max(f.max_fire_ms, fire_ms);
}

void Ledger::Cancelled(std::uint64_t n, std::int64_t answered_ms) {
  std::lock_guard lock(mutex_);
  facts_[n].cancel = Cancel::kAcked;
  facts_[n].cancel_ms = answered_ms;
}

void Ledger::CancelTooLate(std::uint64_t n) {
  std::lock_guard lock(mutex_);
  facts_[n].cancel = Cancel::kTooLate;
}

void Ledger::CancelUncertain(std::uint64_t n) {
  std::lock_guard lock(mutex_);
  facts_[n].cancel = Cancel::kUncertain;
}

void Ledger::Received(const Seen& seen) {
  std::lock_guard lock(mutex_);
  seen_.push_back(seen);
  if (seen.timer < facts_.size()) {
    if (seen.ok) facts_[seen.timer].delivered = true;
    if (seen.late_2xx) facts_[seen.timer].late_2xx = true;
  }
}

std::vector<std::pair<std::uint64_t, std::int64_t>> Ledger::Outstanding() const {
  std::lock_guard lock(mutex_);
  std::vector<std::pair<std::uint64_t, std::int64_t>> out;
  for (std::uint64_t n = 0; n < facts_.size(); ++n) {
    const Facts& f = facts_[n];
    if (f.create == Create::kAcked && (f.cancel == Cancel::kNone || f.cancel == Cancel::kTooLate) &&
        !f.delivered) {
      out.emplace_back(n, f.max_fire_ms);
    }
  }
  return out;
}

std::int64_t Ledger::LatestFireMs() const {
  std::lock_guard lock(mutex_);
  std::int64_t latest = 0;
  for (const Facts& f : facts_) {
    if (f.create == Create::kAcked) latest = std::max(latest, f.max_fire_ms);
  }
  return latest;
}

Verdict Ledger::Judge(const std::function<std::string(std::uint64_t)>& state,
                      std::int64_t start_ms) const {
  std::lock_guard lock(mutex_);
  Verdict v;
  v.sent = facts_.size();
  v.rescheduled = rescheduled_;
  v.attempts = seen_.size();
  auto example = [&v](std::string what) {
    if (v.examples.size() < 20) v.examples.push_back(std::move(what));
  };
  // Per timer: first receipt, 2xx count, attempts seen.
  std::vector<std::int64_t> first(facts_.size(), 0);
  std::vector<std::int64_t> first_fire_at(facts_.size(), 0);  // in that request's body
  std::vector<std::uint32_t> oks(facts_.size(), 0);
  std::set<std::pair<std::uint32_t, std::uint16_t>> attempts;
  std::map<std::int64_t, std::vector<double>> by_second;
  for (const Seen& s : seen_) {
    if (s.timer >= facts_.size() || facts_[s.timer].create != Create::kAcked) {
      ++v.unknown_deliveries;
      continue;
    }
    const Facts& f = facts_[s.timer];
    if (!attempts.emplace(s.timer, s.attempt).second) ++v.repeated_attempts;
    if (s.ok) ++oks[s.timer];
    if (s.attempt == 1) {
      by_second[(s.received_ms - start_ms) / 1000].push_back(
          static_cast<double>(s.received_ms - s.fire_at_ms));
    }
    if (first[s.timer] == 0 || s.received_ms < first[s.timer]) {
      first[s.timer] = s.received_ms;
      first_fire_at[s.timer] = s.fire_at_ms;
    }
    if (s.received_ms < f.min_fire_ms || s.received_ms < s.fire_at_ms) {
      ++v.early;
      example(TimerId(s.timer) + " early: received " + std::to_string(s.received_ms) +
              ", fire time " + std::to_string(f.min_fire_ms) + " (body " +
              std::to_string(s.fire_at_ms) + ")");
    }
    if (f.cancel == Cancel::kAcked && s.received_ms > f.cancel_ms) {
      ++v.fired_after_cancel;
      example(TimerId(s.timer) + " received " + std::to_string(s.received_ms) +
              " after its cancel was answered at " + std::to_string(f.cancel_ms));
    }
  }
  for (std::uint64_t n = 0; n < facts_.size(); ++n) {
    const Facts& f = facts_[n];
    if (f.create == Create::kUncertain) ++v.create_uncertain;
    if (f.create != Create::kAcked) continue;
    ++v.created;
    if (f.uncertain_reschedule) ++v.uncertain_ops;
    switch (f.cancel) {
      case Cancel::kAcked: ++v.cancelled; continue;
      case Cancel::kUncertain: ++v.uncertain_ops; continue;
      case Cancel::kTooLate: ++v.cancel_too_late; break;
      case Cancel::kNone: break;
    }
    ++v.expected;
    if (oks[n] > 0) {
      ++v.delivered;
      v.duplicates += oks[n] - 1;
      // Against the fire time the server fired it for: the acknowledged one,
      // or that of a reschedule whose answer was lost.
      v.lateness_ms.push_back(static_cast<double>(first[n] - first_fire_at[n]));
    } else if (const std::string s = state(n); s == "failed") {
      ++v.dead_letters;
    } else if (s == "delivered" && f.late_2xx) {
      ++v.late_answers_taken;
      example(TimerId(n) + " delivered by a 2xx sent after the delivery timeout");
    } else {
      ++v.lost;
      example(TimerId(n) + " lost (" + (s.empty() ? "state unknown" : "server says " + s) +
              "): fire time " + std::to_string(f.fire_ms) +
              (f.late_2xx ? ", answered 2xx only after the timeout"
                          : first[n] ? ", attempted, never answered 2xx" : ", never attempted"));
    }
  }
  std::sort(v.lateness_ms.begin(), v.lateness_ms.end());
  for (auto& [t, late] : by_second) {
    std::sort(late.begin(), late.end());
    v.series.push_back({t, late.size(), Percentile(late, 0.5), Percentile(late, 0.99), late.back()});
  }
  return v;
}

}  // namespace tickwheel::soak
