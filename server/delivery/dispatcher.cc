#include "delivery/dispatcher.h"

#include <algorithm>
#include <cmath>
#include <memory>

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
                       WebhookClient& client, Metrics& metrics)
    : store_(store), scheduler_(scheduler), client_(client), metrics_(metrics) {}

void Dispatcher::OnFired(std::vector<DueEntry> due) {
  for (DueEntry& entry : due) {
    enum class Outcome { kStale, kNotYet, kClaimed };
    struct Claim {
      Outcome outcome = Outcome::kStale;
      bool recovered = false;
      TimerRecord record;
    };
    auto claim = std::make_shared<Claim>();
    store_.Submit(
        [claim, entry](StoreTxn& txn) {
          std::optional<TimerRecord> r = txn.Get(entry.id);
          if (!r || !IsScheduled(r->state) || r->due_ms != entry.due_ms) return;
          if (WallNowMs() < r->due_ms) {
            claim->outcome = Outcome::kNotYet;
            return;
          }
          TimerRecord next = *r;
          claim->recovered = r->state == TimerState::kDelivering;
          next.state = TimerState::kDelivering;
          next.attempts += 1;
          next.updated_ms = WallNowMs();
          txn.Put(r, next);
          claim->outcome = Outcome::kClaimed;
          claim->record = std::move(next);
        },
        [this, claim, id = entry.id, due_ms = entry.due_ms](const Status& s) {
          if (!s.ok() || claim->outcome != Outcome::kClaimed) {
            if (!s.ok() || claim->outcome == Outcome::kNotYet) {
              scheduler_.Arm(id, due_ms);
            }
            scheduler_.Finish(id);
            return;
          }
          metrics_.fired.fetch_add(1, std::memory_order_relaxed);
          if (claim->recovered) {
            metrics_.duplicates_after_recovery.fetch_add(1, std::memory_order_relaxed);
          }
          metrics_.lateness.Observe(static_cast<double>(WallNowMs() - due_ms));
          Deliver(std::move(claim->record));
        },
        /*sync=*/false);
  }
}

void Dispatcher::Deliver(TimerRecord record) {
  in_flight_.fetch_add(1);
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
  return static_cast<std::int64_t>(capped * jitter(rng_));
}

void Dispatcher::Complete(const std::string& id, std::uint32_t attempt,
                          WebhookResult result) {
  enum class Outcome { kNone, kDelivered, kRetry, kFailed };
  struct Done {
    Outcome outcome = Outcome::kNone;
    std::int64_t due_ms = 0;
  };
  auto done = std::make_shared<Done>();
  store_.Submit(
      [this, done, id, attempt, result = std::move(result)](StoreTxn& txn) {
        std::optional<TimerRecord> r = txn.Get(id);
        if (!r || r->state != TimerState::kDelivering || r->attempts != attempt) {
          return;
        }
        TimerRecord next = *r;
        next.updated_ms = WallNowMs();
        if (result.ok) {
          next.state = TimerState::kDelivered;
          next.last_error.clear();
          done->outcome = Outcome::kDelivered;
        } else if (next.attempts < next.max_attempts) {
          next.state = TimerState::kPending;
          next.due_ms = next.updated_ms + Backoff(next);
          next.last_error = result.error;
          done->outcome = Outcome::kRetry;
          done->due_ms = next.due_ms;
        } else {
          next.state = TimerState::kFailed;
          next.last_error = result.error;
          done->outcome = Outcome::kFailed;
        }
        txn.Put(r, next);
      },
      [this, done, id](const Status&) {
        switch (done->outcome) {
          case Outcome::kDelivered:
            metrics_.delivered.fetch_add(1, std::memory_order_relaxed);
            break;
          case Outcome::kRetry:
            metrics_.retried.fetch_add(1, std::memory_order_relaxed);
            scheduler_.Arm(id, done->due_ms);
            break;
          case Outcome::kFailed:
            metrics_.failed.fetch_add(1, std::memory_order_relaxed);
            break;
          case Outcome::kNone:
            break;
        }
        scheduler_.Finish(id);
        in_flight_.fetch_sub(1);
      },
      /*sync=*/false);
}

}  // namespace tickwheel::server
