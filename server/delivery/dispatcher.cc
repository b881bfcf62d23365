#include "delivery/dispatcher.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "api/timer_request.h"
#include "wall_clock.h"

namespace tickwheel::server {

std::string DeliveryBody(const TimerRecord& r) {
  // Ids are restricted to [A-Za-z0-9._~-] (see api/timer_request.h), so
  // they need no escaping; the payload is stored as serialized JSON.
  std::string body;
  body.reserve(64 + r.id.size() + r.payload.size());
  body += "{\"id\":\"";
  body += r.id;
  body += "\",\"payload\":";
  body += r.payload;
  body += ",\"fire_at_ms\":";
  body += std::to_string(r.fire_at_ms);
  body += ",\"attempt\":";
  body += std::to_string(r.attempts);
  body += "}";
  return body;
}

Dispatcher::Dispatcher(TimerStore& store, Scheduler& scheduler,
                       WebhookClient& client, NatsPublisher* nats, Metrics& metrics)
    : store_(store), scheduler_(scheduler), client_(client), nats_(nats), metrics_(metrics) {}

void Dispatcher::OnFired(std::vector<DueEntry> due) {
  // Claims are written in chunks: one atomic write per chunk.
  constexpr std::size_t kChunk = 128;
  for (std::size_t from = 0; from < due.size(); from += kChunk) {
    const std::size_t to = std::min(due.size(), from + kChunk);
    auto entries = std::make_shared<std::vector<DueEntry>>(
        std::make_move_iterator(due.begin() + static_cast<std::ptrdiff_t>(from)),
        std::make_move_iterator(due.begin() + static_cast<std::ptrdiff_t>(to)));
    ClaimChunk(std::move(entries));
  }
}

void Dispatcher::ClaimChunk(std::shared_ptr<std::vector<DueEntry>> entries) {
  enum class Outcome { kStale, kNotYet, kClaimed };
  struct Claim {
    Outcome outcome = Outcome::kStale;
    bool recovered = false;
    TimerRecord record;
  };
  auto claims = std::make_shared<std::vector<Claim>>(entries->size());
  std::vector<std::string> ids;
  ids.reserve(entries->size());
  for (const DueEntry& e : *entries) ids.push_back(e.id);
  store_.Submit(
      std::move(ids),
      [claims, entries](StoreTxn& txn) {
        const std::int64_t now = WallNowMs();
        for (std::size_t i = 0; i < entries->size(); ++i) {
          const DueEntry& entry = (*entries)[i];
          Claim& claim = (*claims)[i];
          std::optional<TimerRecord> r = txn.Get(entry.id);
          if (!r || !IsScheduled(r->state) || r->due_ms != entry.due_ms) continue;
          if (now < r->due_ms) {
            claim.outcome = Outcome::kNotYet;
            continue;
          }
          TimerRecord next = *r;
          claim.recovered = r->state == TimerState::kDelivering;
          next.state = TimerState::kDelivering;
          next.attempts += 1;
          next.updated_ms = now;
          txn.Put(r, next);
          claim.outcome = Outcome::kClaimed;
          claim.record = std::move(next);
        }
      },
      [this, claims, entries](const Status& s) {
        const std::int64_t now = WallNowMs();
        for (std::size_t i = 0; i < entries->size(); ++i) {
          const DueEntry& entry = (*entries)[i];
          Claim& claim = (*claims)[i];
          if (!s.ok() || claim.outcome != Outcome::kClaimed) {
            if (!s.ok() || claim.outcome == Outcome::kNotYet) {
              scheduler_.Arm(entry.id, entry.due_ms);
            }
            scheduler_.Finish(entry.id);
            continue;
          }
          metrics_.fired.fetch_add(1, std::memory_order_relaxed);
          if (claim.recovered) {
            metrics_.duplicates_after_recovery.fetch_add(1, std::memory_order_relaxed);
          }
          metrics_.lateness.Observe(static_cast<double>(now - entry.due_ms));
          Deliver(std::move(claim.record));
        }
      },
      /*sync=*/false);
}

void Dispatcher::Deliver(TimerRecord record) {
  in_flight_.fetch_add(1);
  const std::string_view target(record.url);
  if (target.substr(0, kNatsPrefix.size()) == kNatsPrefix) {
    if (nats_ == nullptr) {  // created by a server that had --nats
      Complete(record.id, record.attempts,
               WebhookResult{false, 0, "NATS target, but this server runs without --nats", 0});
      return;
    }
    nats_->Publish(std::string(target.substr(kNatsPrefix.size())), DeliveryBody(record),
                   record.id,
                   [this, id = record.id, attempt = record.attempts](WebhookResult r) {
                     metrics_.delivery_latency.Observe(r.latency_ms);
                     Complete(id, attempt, std::move(r));
                   });
    return;
  }
  std::optional<HttpUrl> url = ParseHttpUrl(record.url);
  if (!url) {  // validated at create; only a corrupted record gets here
    Complete(record.id, record.attempts,
             WebhookResult{false, 0, "bad target URL " + record.url, 0});
    return;
  }
  client_.Post(*url, DeliveryBody(record), record.id,
               [this, id = record.id, attempt = record.attempts](WebhookResult r) {
                 metrics_.delivery_latency.Observe(r.latency_ms);
                 Complete(id, attempt, std::move(r));
               });
}

std::int64_t Dispatcher::Backoff(const TimerRecord& r) {
  const double base = static_cast<double>(std::max<std::uint32_t>(r.backoff_ms, 1));
  const double exp = std::ldexp(base, static_cast<int>(std::min<std::uint32_t>(r.attempts - 1, 30)));
  const double capped = std::min(exp, 24.0 * 3600 * 1000);
  std::uniform_real_distribution<double> jitter(0.5, 1.5);
  std::lock_guard lock(rng_mutex_);
  return static_cast<std::int64_t>(capped * jitter(rng_));
}

void Dispatcher::Complete(const std::string& id, std::uint32_t attempt,
                          WebhookResult result) {
  bool post = false;
  {
    std::lock_guard lock(outcomes_mutex_);
    outcomes_.push_back({id, attempt, std::move(result)});
    post = !flush_posted_;
    flush_posted_ = true;
  }
  if (post) client_.Defer([this] { FlushOutcomes(); });
}

void Dispatcher::FlushOutcomes() {
  auto outcomes = std::make_shared<std::vector<Outcome>>();
  {
    std::lock_guard lock(outcomes_mutex_);
    outcomes->swap(outcomes_);
    flush_posted_ = false;
  }
  if (outcomes->empty()) return;
  enum class Kind { kNone, kDelivered, kRetry, kFailed };
  struct Written {
    Kind kind = Kind::kNone;
    std::int64_t due_ms = 0;
  };
  auto written = std::make_shared<std::vector<Written>>(outcomes->size());
  std::vector<std::string> ids;
  ids.reserve(outcomes->size());
  for (const Outcome& o : *outcomes) ids.push_back(o.id);
  store_.Submit(
      std::move(ids),
      [this, outcomes, written](StoreTxn& txn) {
        const std::int64_t now = WallNowMs();
        for (std::size_t i = 0; i < outcomes->size(); ++i) {
          const Outcome& o = (*outcomes)[i];
          Written& w = (*written)[i];
          std::optional<TimerRecord> r = txn.Get(o.id);
          if (!r || r->state != TimerState::kDelivering || r->attempts != o.attempt) {
            continue;
          }
          TimerRecord next = *r;
          next.updated_ms = now;
          if (o.result.ok) {
            next.state = TimerState::kDelivered;
            next.last_error.clear();
            w.kind = Kind::kDelivered;
          } else if (next.attempts < next.max_attempts) {
            next.state = TimerState::kPending;
            next.due_ms = now + Backoff(next);
            next.last_error = o.result.error;
            w.kind = Kind::kRetry;
            w.due_ms = next.due_ms;
          } else {
            next.state = TimerState::kFailed;
            next.last_error = o.result.error;
            w.kind = Kind::kFailed;
          }
          txn.Put(r, next);
        }
      },
      [this, outcomes, written](const Status&) {
        for (std::size_t i = 0; i < outcomes->size(); ++i) {
          const std::string& id = (*outcomes)[i].id;
          switch ((*written)[i].kind) {
            case Kind::kDelivered:
              metrics_.delivered.fetch_add(1, std::memory_order_relaxed);
              break;
            case Kind::kRetry:
              metrics_.retried.fetch_add(1, std::memory_order_relaxed);
              scheduler_.Arm(id, (*written)[i].due_ms);
              break;
            case Kind::kFailed:
              metrics_.failed.fetch_add(1, std::memory_order_relaxed);
              break;
            case Kind::kNone:
              break;
          }
          scheduler_.Finish(id);
          in_flight_.fetch_sub(1);
        }
      },
      /*sync=*/false);
}

}  // namespace tickwheel::server
