// SPDX-License-Identifier: Apache-2.0
#include "delivery/dispatcher.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>

#include "schedule/schedule_service.h"
#include "timer/occurrence_id.h"
#include "timer/target.h"
#include "timer/timer_state_machine.h"
#include "timer/trace_context.h"

namespace tickwheel::server {
namespace {

constexpr std::chrono::milliseconds kFirstStoreRetry{250};
constexpr std::chrono::milliseconds kLastStoreRetry{10'000};

// Splits `entries` by shard, in chunks of at most `chunk`: a fenced write
// is about one shard, so losing one shard fails no other's.
template <typename T, typename IdOf>
std::vector<std::vector<T>> ByShard(std::vector<T> items, const TimerStore& store,
                                    std::size_t chunk, IdOf id_of) {
  std::map<int, std::vector<T>> shards;
  for (T& item : items) shards[store.ShardOf(id_of(item))].push_back(std::move(item));
  std::vector<std::vector<T>> out;
  for (auto& [shard, list] : shards) {
    for (std::size_t from = 0; from < list.size(); from += chunk) {
      const auto first = list.begin() + static_cast<std::ptrdiff_t>(from);
      const auto last = list.begin() + static_cast<std::ptrdiff_t>(std::min(list.size(), from + chunk));
      out.emplace_back(std::make_move_iterator(first), std::make_move_iterator(last));
    }
  }
  return out;
}

}  // namespace

std::string MessageIdOf(const TimerRecord& r) {
  return r.id + ":" + std::to_string(r.created_ms);
}

std::string DeliveryBody(const TimerRecord& r) {
  // Ids are restricted to [A-Za-z0-9._~-] (api/timer_request.h), and an
  // occurrence's adds '@' and digits, so they need no escaping; the
  // payload is stored as serialized JSON.
  std::string body;
  body.reserve(96 + 2 * r.id.size() + r.payload.size());
  body += "{\"id\":\"";
  body += r.id;
  body += "\",\"payload\":";
  body += r.payload;
  body += ",\"fire_at_ms\":";
  body += std::to_string(r.fire_at_ms);
  body += ",\"attempt\":";
  body += std::to_string(r.attempts);
  if (std::optional<OccurrenceName> occurrence = ParseOccurrenceId(r.id)) {
    body += ",\"schedule\":\"";
    body += occurrence->schedule_id;
    body += "\",\"nominal_ms\":";
    body += std::to_string(occurrence->nominal_ms);
  }
  body += "}";
  return body;
}

void Dispatcher::CountPlanning(const PlanTotals& totals) {
  metrics_.occurrences_planned.fetch_add(totals.planned, std::memory_order_relaxed);
  metrics_.occurrences_fired.fetch_add(totals.fired, std::memory_order_relaxed);
  metrics_.occurrences_skipped_overlap.fetch_add(totals.skipped_overlap, std::memory_order_relaxed);
  metrics_.occurrences_skipped_catch_up.fetch_add(totals.skipped_catch_up,
                                                  std::memory_order_relaxed);
  metrics_.occurrences_skipped_dst.fetch_add(totals.skipped_dst, std::memory_order_relaxed);
  for (std::int64_t lag : totals.lag_ms) metrics_.planning_lag.Observe(static_cast<double>(lag));
}

Dispatcher::Dispatcher(TimerStore& store, Scheduler& scheduler, ServerClock& clock,
                       WebhookClient& client, NatsPublisher* nats, Metrics& metrics,
                       Options options)
    : options_(options),
      store_(store),
      scheduler_(scheduler),
      clock_(clock),
      client_(client),
      nats_(nats),
      metrics_(metrics),
      timers_(TimerServiceOptions{.clock = &clock.steady()}) {}

Dispatcher::~Dispatcher() { Stop(); }

void Dispatcher::Stop() {
  if (stopped_.exchange(true)) return;
  timers_.Stop();
}

std::chrono::milliseconds Dispatcher::NextStoreRetryDelay() {
  internal::MutexLock lock(outcomes_mutex_);
  store_retry_delay_ = std::clamp(store_retry_delay_ * 2, kFirstStoreRetry, kLastStoreRetry);
  return store_retry_delay_;
}

void Dispatcher::Done(const std::string& id) {
  scheduler_.Finish(id);
  in_flight_.fetch_sub(1);
}

void Dispatcher::Park(const DueEntry& entry) {
  // Kept in memory, looked at again an hour later: neither dropped (the
  // overdue sweep would bring it back every few seconds) nor retried often.
  scheduler_.FinishAndRetryIn(entry.id, entry.due_ms, kParkedFor);
  in_flight_.fetch_sub(1);
}

void Dispatcher::OnFired(std::vector<FiredTimer> due) {
  in_flight_.fetch_add(static_cast<std::int64_t>(due.size()));
  // One claim per shard, queued together: the store may commit them in one
  // transaction (a PostgreSQL round trip per statement is the cost of a
  // claim, not its rows), and each is still fenced on its own.
  std::vector<TimerStore::Write> claims;
  for (auto& chunk :
       ByShard(std::move(due), store_, kClaimChunk,
               [](const FiredTimer& f) -> const std::string& { return f.entry.id; })) {
    claims.push_back(ClaimWrite(std::move(chunk)));
  }
  store_.SubmitAll(std::move(claims));
}

TimerStore::Write Dispatcher::ClaimWrite(std::vector<FiredTimer> chunk) {
  enum class Kind { kStale, kNotYet, kClaimed, kRecovered, kNoNats, kUnreadable, kSkipped };
  struct Claimed {
    Kind kind = Kind::kStale;
    TimerRecord record;
  };
  auto entries = std::make_shared<std::vector<FiredTimer>>(std::move(chunk));
  auto claims = std::make_shared<std::vector<Claimed>>(entries->size());
  auto planning = std::make_shared<PlanTotals>();
  std::vector<std::string> ids;
  ids.reserve(entries->size());
  for (const FiredTimer& f : *entries) ids.push_back(f.entry.id);
  // The first attempt of a schedule's occurrence plans the schedule in the
  // same write: the schedules are named too.
  std::vector<std::string> locked = WithScheduleKeys(ids);
  const bool nats = nats_ != nullptr;
  return TimerStore::Write{
      std::move(locked),
      [this, claims, entries, planning, nats, ids = std::move(ids)](StoreTxn& txn) -> Status {
        const std::int64_t now = clock_.WallMs();
        OccurrencePlanning schedules(txn, now);
        if (ids.size() > 1 && std::any_of(ids.begin(), ids.end(), [](const std::string& id) {
              return id.find('@') != std::string::npos;
            })) {
          schedules.Prefetch(ids);
        }
        for (std::size_t i = 0; i < entries->size(); ++i) {
          Claimed& claim = (*claims)[i];
          claim = Claimed{};  // the mutation may run again (a retried transaction)
          Result<std::optional<TimerRecord>> r = txn.Get((*entries)[i].entry.id);
          if (!r.ok()) {
            claim.kind = Kind::kUnreadable;
            claim.record.last_error = r.status().message();
            continue;
          }
          if (!*r) continue;
          if (IsNatsTarget((*r)->target) && !nats) {
            claim.kind = Kind::kNoNats;
            continue;
          }
          switch (Claim(**r, (*entries)[i].entry.due_ms, now, &claim.record)) {
            case ClaimResult::kStale: claim.kind = Kind::kStale; continue;
            case ClaimResult::kNotYet: claim.kind = Kind::kNotYet; continue;
            case ClaimResult::kClaimed: claim.kind = Kind::kClaimed; break;
            case ClaimResult::kRecovered: claim.kind = Kind::kRecovered; break;
          }
          if (claim.kind == Kind::kClaimed && (*r)->attempts == 0) {
            Result<OccurrencePlanning::Claimed> planned =
                schedules.Claim(**r, scheduler_.OwnedSinceMs((*r)->id));
            if (!planned.ok()) return planned.status();
            if (*planned == OccurrencePlanning::Claimed::kSkipped ||
                *planned == OccurrencePlanning::Claimed::kBuffered) {
              claim.kind = Kind::kSkipped;  // written by the schedule's planning
              continue;
            }
          }
          txn.Put(*r, claim.record);
        }
        *planning = schedules.totals();
        return Status::Ok();
      },
      [this, claims, entries, planning](const Status& s) {
        if (s.ok()) CountPlanning(*planning);
        // Fenced while the shard is still ours: the lease was only late to
        // be confirmed; like a store failure, try again after a pause.
        const bool owned = s.code() == StatusCode::kFenced && !entries->empty() &&
                           scheduler_.OwnsShardOf(entries->front().entry.id);
        if (s.code() == StatusCode::kFenced) {
          metrics_.fenced_writes.fetch_add(1, std::memory_order_relaxed);
        }
        if (s.code() == StatusCode::kFenced && !owned) {  // another node's now
          for (const FiredTimer& f : *entries) Done(f.entry.id);
          return;
        }
        if (!s.ok()) {
          metrics_.store_write_failures.fetch_add(1, std::memory_order_relaxed);
          const std::chrono::milliseconds pause = NextStoreRetryDelay();
          spdlog::warn("could not claim {} due timers ({}); trying again in {} ms",
                       entries->size(), s.message(), pause.count());
          for (const FiredTimer& f : *entries) {
            scheduler_.FinishAndRetryIn(f.entry.id, f.entry.due_ms, pause);
            in_flight_.fetch_sub(1);
          }
          return;
        }
        const std::int64_t now = clock_.WallMs();
        std::vector<Send> sends;
        for (std::size_t i = 0; i < entries->size(); ++i) {
          const DueEntry& entry = (*entries)[i].entry;
          const std::int64_t throttled_ms = (*entries)[i].throttled_ms;
          Claimed& claim = (*claims)[i];
          switch (claim.kind) {
            case Kind::kStale:
            case Kind::kSkipped:
              Done(entry.id);
              break;
            case Kind::kNotYet:  // the wall clock went back: wait for it
              scheduler_.FinishAndRetryIn(entry.id, entry.due_ms, std::chrono::milliseconds(0));
              in_flight_.fetch_sub(1);
              break;
            case Kind::kNoNats:
              metrics_.waiting_for_nats.fetch_add(1, std::memory_order_relaxed);
              spdlog::warn("timer {} targets NATS, but this server runs without --nats: it stays "
                           "pending until a server with --nats delivers it", entry.id);
              Park(entry);
              break;
            case Kind::kUnreadable:
              spdlog::error("timer {} is due but cannot be delivered: {}", entry.id,
                            claim.record.last_error);
              Park(entry);
              break;
            case Kind::kRecovered:
              metrics_.duplicates_after_recovery.fetch_add(1, std::memory_order_relaxed);
              [[fallthrough]];
            case Kind::kClaimed:
              metrics_.fired.fetch_add(1, std::memory_order_relaxed);
              // Lateness is the server's; what its flow held it back is
              // throttling (docs/flows.md).
              metrics_.lateness.Observe(
                  static_cast<double>(std::max<std::int64_t>(0, now - entry.due_ms - throttled_ms)));
              if (throttled_ms > 0) metrics_.throttled.Observe(static_cast<double>(throttled_ms));
              sends.push_back({std::move(claim.record), throttled_ms});
              break;
          }
        }
        SendPaced(std::move(sends));
      },
      WriteOptions{.sync = false, .fenced = true}};
}

void Dispatcher::SendPaced(std::vector<Send> sends) {
  if (sends.empty()) return;
  std::vector<std::string> ids;
  ids.reserve(sends.size());
  for (const Send& send : sends) ids.push_back(send.record.id);
  const std::vector<Duration> delays = scheduler_.StartDelays(ids);
  for (std::size_t i = 0; i < sends.size(); ++i) {
    if (delays[i] <= Duration(0)) {
      Deliver(sends[i].record, sends[i].throttled_ms);
      continue;
    }
    // Held by its flow's pace: throttling too (in its attempt log).
    sends[i].throttled_ms += std::chrono::ceil<std::chrono::milliseconds>(delays[i]).count();
    timers_.After(delays[i], [this, send = std::make_shared<Send>(std::move(sends[i]))] {
      Deliver(send->record, send->throttled_ms);
    });
  }
}

void Dispatcher::Deliver(const TimerRecord& record, std::int64_t throttled_ms) {
  const std::int64_t started_ms = clock_.WallMs();
  const bool nats = IsNatsTarget(record.target);
  Result<HttpUrl> url = nats ? Result<HttpUrl>(HttpUrl{}) : ParseHttpUrl(record.target);
  // For the debug log: the host only (a path or query may hold a secret).
  std::string where = nats ? "nats:" + std::string(NatsSubject(record.target))
                           : (url.ok() ? url->HostHeader() : "?");
  auto done = [this, id = record.id, attempt = record.attempts, started_ms, throttled_ms,
               where = std::move(where)](AttemptResult r) {
    OnAttemptDone(id, attempt, started_ms, throttled_ms, where, std::move(r));
  };
  // Each attempt is a new span of the timer's trace (timer/trace_context.h).
  std::vector<std::pair<std::string, std::string>> trace =
      AttemptTraceHeaders(record.trace, NewSpanId());
  if (nats) {
    nats_->Publish(std::string(NatsSubject(record.target)), DeliveryBody(record),
                   MessageIdOf(record), std::move(trace), std::move(done));
    return;
  }
  if (!url.ok()) {  // validated at create; only a damaged record gets here
    AttemptResult bad;
    bad.error = "bad target URL: " + url.status().message();
    done(std::move(bad));
    return;
  }
  std::string message_id = MessageIdOf(record);
  WebhookRequest request{std::move(*url), DeliveryBody(record), record.headers, message_id};
  request.headers.emplace_back("Idempotency-Key", std::move(message_id));
  // After the target's own headers: a traceparent or tracestate among them
  // gives way to the timer's trace (the client sets, not adds, each).
  for (auto& header : trace) request.headers.push_back(std::move(header));
  client_.Post(std::move(request), std::move(done));
}

void Dispatcher::OnAttemptDone(const std::string& id, std::uint32_t attempt,
                               std::int64_t started_ms, std::int64_t throttled_ms,
                               const std::string& where, AttemptResult result) {
  if (spdlog::should_log(spdlog::level::debug)) {
    // Never the URL's path or query, the headers or the payload: they may
    // hold secrets.
    const char* kind = result.kind == AttemptResult::Kind::kDelivered ? "delivered"
                       : result.kind == AttemptResult::Kind::kAborted ? "aborted"
                                                                      : "failed";
    spdlog::debug("attempt {} of {} to {}: {}{}{}, {:.1f} ms", attempt, id, where, kind,
                  result.status != 0 ? " HTTP " + std::to_string(result.status) : "",
                  result.error.empty() || result.status != 0 ? "" : " (" + result.error + ")",
                  result.latency_ms);
  }
  if (result.kind == AttemptResult::Kind::kAborted) {
    Done(id);  // nothing written: `delivering` until the next start
    return;
  }
  // The flow's slot is free now, not once the outcome is written: a
  // receiver sees at most max_in_flight requests at once, and no fewer.
  FlowSignal signal;
  signal.delivered = result.kind == AttemptResult::Kind::kDelivered;
  signal.retry_after_ms = result.retry_after_ms;
  signal.too_many_requests = result.status == 429 && result.retry_after_ms == 0;
  scheduler_.AttemptEnded(id, signal);
  metrics_.delivery_latency.Observe(result.latency_ms);
  if (result.unanswered) metrics_.attempts_unanswered.fetch_add(1, std::memory_order_relaxed);
  Outcome o;
  o.id = id;
  o.attempt = attempt;
  o.outcome.delivered = result.kind == AttemptResult::Kind::kDelivered;
  o.outcome.log.started_ms = started_ms;
  o.outcome.log.duration_ms = static_cast<std::uint32_t>(std::max(0.0, result.latency_ms));
  o.outcome.log.status = result.status;
  o.outcome.log.error = std::move(result.error);
  o.outcome.log.throttled_ms =
      static_cast<std::uint32_t>(std::clamp<std::int64_t>(throttled_ms, 0, UINT32_MAX));
  if (result.retry_after_ms > 0) {
    o.outcome.not_before_ms = clock_.WallMs() + result.retry_after_ms;
  }
  {
    internal::MutexLock lock(outcomes_mutex_);
    o.jitter = std::uniform_real_distribution<double>(0.5, 1.5)(rng_);
    o.queued_at = clock_.steady().Now();
    outcomes_.push_back(std::move(o));
  }
  FlushOutcomes();
}

void Dispatcher::FlushOutcomes() {
  for (;;) {
    std::vector<Outcome> batch;
    {
      internal::MutexLock lock(outcomes_mutex_);
      if (outcomes_.empty() || outcome_writes_ >= kMaxOutcomeWrites || retry_scheduled_ ||
          LingerLocked()) {
        return;
      }
      const std::size_t n = std::min(outcomes_.size(), kOutcomeChunk);
      batch.assign(std::make_move_iterator(outcomes_.begin()),
                   std::make_move_iterator(outcomes_.begin() + static_cast<std::ptrdiff_t>(n)));
      outcomes_.erase(outcomes_.begin(), outcomes_.begin() + static_cast<std::ptrdiff_t>(n));
      ++outcome_writes_;
    }
    WriteOutcomes(std::move(batch));
  }
}

bool Dispatcher::LingerLocked() {
  if (options_.outcome_linger.count() == 0 || outcomes_.size() >= kLingerBelow ||
      stopped_.load()) {
    return false;
  }
  const TimePoint now = clock_.steady().Now();
  const TimePoint flush_at = outcomes_.front().queued_at + options_.outcome_linger;
  if (now >= flush_at) return false;
  if (!linger_scheduled_) {
    linger_scheduled_ = true;
    timers_.After(flush_at - now, [this] {
      {
        internal::MutexLock lock(outcomes_mutex_);
        linger_scheduled_ = false;
      }
      FlushOutcomes();
    });
  }
  return true;
}

void Dispatcher::WriteOutcomes(std::vector<Outcome> outcomes) {
  auto parts = ByShard(std::move(outcomes), store_, kOutcomeChunk,
                       [](const Outcome& o) -> const std::string& { return o.id; });
  auto batch = std::make_shared<OutcomeBatch>();
  {
    internal::MutexLock lock(batch->mutex);
    batch->unsettled = static_cast<int>(parts.size());
  }
  std::vector<TimerStore::Write> writes;  // queued together, as claims are
  for (auto& part : parts) {
    auto items = std::make_shared<std::vector<Outcome>>(std::move(part));
    auto states = std::make_shared<std::vector<TimerState>>(items->size(), TimerState::kDelivering);
    auto planning = std::make_shared<PlanTotals>();
    std::vector<std::string> ids;
    for (const Outcome& o : *items) ids.push_back(o.id);
    // A finished occurrence may release the one its schedule buffered.
    writes.push_back(TimerStore::Write{
        WithScheduleKeys(std::move(ids)),
        [this, items, states, planning](StoreTxn& txn) -> Status {
          const std::int64_t now = clock_.WallMs();
          OccurrencePlanning schedules(txn, now);
          for (std::size_t i = 0; i < items->size(); ++i) {
            const Outcome& o = (*items)[i];
            (*states)[i] = TimerState::kDelivering;  // the mutation may run again
            Result<std::optional<TimerRecord>> r = txn.Get(o.id);
            if (!r.ok() || !*r || !AwaitsOutcome(**r, o.attempt)) continue;  // stale
            TimerRecord next = Complete(**r, o.outcome, now, RetryDelayMs(**r, o.jitter));
            (*states)[i] = next.state;
            if (next.state != TimerState::kPending) {
              if (Status s = schedules.Finished(next, /*fired=*/true); !s.ok()) return s;
            }
            txn.Put(*r, std::move(next));
          }
          *planning = schedules.totals();
          return Status::Ok();
        },
        [this, batch, items, states, planning](const Status& s) {
          if (s.ok()) CountPlanning(*planning);
          PartWritten(*batch, *items, *states, s);
        },
        WriteOptions{.sync = false, .fenced = true}});
  }
  store_.SubmitAll(std::move(writes));
}

void Dispatcher::PartWritten(OutcomeBatch& batch, std::vector<Outcome>& items,
                             const std::vector<TimerState>& states, const Status& s) {
  if (s.code() == StatusCode::kFenced) metrics_.fenced_writes.fetch_add(1, std::memory_order_relaxed);
  // Fenced while the shard is still ours (a lease late to be confirmed):
  // kept and written again, like after a store failure. Fenced and no
  // longer ours: dropped, the new owner fires the timer again.
  const bool keep = !s.ok() && (s.code() != StatusCode::kFenced ||
                                (!items.empty() && scheduler_.OwnsShardOf(items.front().id)));
  if (!keep) {
    if (s.ok()) {
      internal::MutexLock lock(outcomes_mutex_);
      store_retry_delay_ = std::chrono::milliseconds(0);
    }
    for (std::size_t i = 0; i < items.size(); ++i) {
      switch (states[i]) {
        case TimerState::kDelivered:
          metrics_.delivered.fetch_add(1, std::memory_order_relaxed);
          break;
        case TimerState::kPending:
          metrics_.retried.fetch_add(1, std::memory_order_relaxed);
          break;
        case TimerState::kFailed:
          metrics_.failed.fetch_add(1, std::memory_order_relaxed);
          break;
        default:
          break;
      }
      Done(items[i].id);
    }
  } else {
    metrics_.store_write_failures.fetch_add(1, std::memory_order_relaxed);
  }
  std::vector<Outcome> failed;
  {
    internal::MutexLock lock(batch.mutex);
    if (keep) {
      batch.failed.insert(batch.failed.end(), std::make_move_iterator(items.begin()),
                          std::make_move_iterator(items.end()));
    }
    if (--batch.unsettled > 0) return;
    failed.swap(batch.failed);
  }
  // The whole batch is settled: keep what could not be written (in front,
  // so outcomes of one timer stay in order) and write it again after a
  // pause; go on with what is queued.
  const std::size_t kept = failed.size();
  bool retry = false;
  {
    internal::MutexLock lock(outcomes_mutex_);
    --outcome_writes_;
    if (kept > 0) {
      outcomes_.insert(outcomes_.begin(), std::make_move_iterator(failed.begin()),
                       std::make_move_iterator(failed.end()));
      retry = !retry_scheduled_;
      retry_scheduled_ = true;
    }
  }
  if (retry && !stopped_.load()) {
    const std::chrono::milliseconds pause = NextStoreRetryDelay();
    spdlog::warn("could not write the outcome of {} attempts; trying again in {} ms", kept,
                 pause.count());
    timers_.After(pause, [this] {
      {
        internal::MutexLock lock(outcomes_mutex_);
        retry_scheduled_ = false;
      }
      FlushOutcomes();
    });
  }
  FlushOutcomes();
}

}  // namespace tickwheel::server
