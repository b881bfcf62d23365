// SPDX-License-Identifier: Apache-2.0
// Dispatcher: turns fired timers into delivery attempts, and the attempts'
// outcomes into state transitions (timer/timer_state_machine.h).
#ifndef TICKWHEEL_SERVER_DELIVERY_DISPATCHER_H_
#define TICKWHEEL_SERVER_DELIVERY_DISPATCHER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <random>
#include <vector>

#include "common/metrics.h"
#include "common/server_clock.h"
#include "delivery/nats_publisher.h"
#include "delivery/webhook_client.h"
#include "scheduler/scheduler.h"
#include "store/timer_store.h"
#include "timer/timer_state_machine.h"
#include "tickwheel/internal/mutex.h"
#include "tickwheel/timer_service.h"

namespace tickwheel::server {

// Per attempt:
//   claim    one fenced store write per chunk of fired timers (of one shard):
//            Claim() of each record; stale entries are dropped.
//   send     POST {"id", "payload", "fire_at_ms", "attempt"} with
//            Idempotency-Key: <id> and the timer's headers (and, when the
//            client has secrets, webhook-id: <id> and its signature); or,
//            for a NATS target, publish that body with Nats-Msg-Id: <id>.
//            With the debug log level, each attempt's outcome is logged
//            (id, attempt, host, status, latency; never the URL's path,
//            headers or payload).
//   outcome  Complete() of each record, written in batches (fenced).
// Failures of the store never lose or spin: a claim that cannot be written
// fires again after a pause; outcomes that cannot be written are kept (the
// timers stay in flight) and written again after a pause, growing to 10 s.
// A fenced write drops what it was about if this node no longer owns the
// shard (the new owner fires those timers), and is tried again after a pause
// if it still does (its lease was only late to be confirmed). An attempt aborted by a stopping server
// writes nothing: the timer stays `delivering` and fires at the next start.
// A timer with a NATS target on a server without --nats, or whose record
// cannot be read, is not claimed: it stays pending (looked at again hourly)
// for a server that can deliver it.
//
// Thread safety: OnFired from any thread (the scheduler's); outcomes arrive
// on the delivery threads.
class Dispatcher {
 public:
  // `nats` may be null. All references must outlive this.
  Dispatcher(TimerStore& store, Scheduler& scheduler, ServerClock& clock,
             WebhookClient& client, NatsPublisher* nats, Metrics& metrics);
  ~Dispatcher();  // Stop()

  // The scheduler's `fire` callback.
  void OnFired(std::vector<DueEntry> due);

  // Attempts claimed whose outcome is not yet written (or dropped).
  std::int64_t in_flight() const { return in_flight_.load(); }

  // Stops writing again what failed to be written; what is left stays in
  // flight (and `delivering` in the store). Idempotent.
  void Stop();

 private:
  struct Outcome {
    std::string id;
    std::uint32_t attempt;
    AttemptOutcome outcome;
    double jitter;  // of the retry delay, drawn when the outcome arrived
  };

  void ClaimChunk(std::vector<DueEntry> entries);
  // Leaves a timer that cannot be attempted here in memory for an hour.
  void Park(const DueEntry& entry);
  static constexpr std::chrono::hours kParkedFor{1};
  void Deliver(const TimerRecord& record);
  // `where`: the target's host:port or NATS subject, for the debug log.
  void OnAttemptDone(const std::string& id, std::uint32_t attempt, std::int64_t started_ms,
                     const std::string& where, AttemptResult result);
  // Writes queued outcomes, at most kMaxOutcomeWrites writes at a time.
  void FlushOutcomes() TW_EXCLUDES(outcomes_mutex_);
  // One call of WriteOutcomes: its outcomes are written in parts (one
  // per shard); the last part to settle takes back what failed.
  struct OutcomeBatch {
    internal::Mutex mutex;
    int unsettled TW_GUARDED_BY(mutex) = 0;
    std::vector<Outcome> failed TW_GUARDED_BY(mutex);
  };
  void WriteOutcomes(std::vector<Outcome> outcomes);
  void PartWritten(OutcomeBatch& batch, std::vector<Outcome>& items,
                   const std::vector<TimerState>& states, const Status& s);
  void Done(const std::string& id);
  std::chrono::milliseconds NextStoreRetryDelay() TW_EXCLUDES(outcomes_mutex_);

  static constexpr std::size_t kClaimChunk = 128;
  static constexpr std::size_t kOutcomeChunk = 1024;
  static constexpr int kMaxOutcomeWrites = 2;

  TimerStore& store_;
  Scheduler& scheduler_;
  ServerClock& clock_;
  WebhookClient& client_;
  NatsPublisher* const nats_;
  Metrics& metrics_;
  std::atomic<std::int64_t> in_flight_{0};
  std::atomic<bool> stopped_{false};

  internal::Mutex outcomes_mutex_;
  std::deque<Outcome> outcomes_ TW_GUARDED_BY(outcomes_mutex_);
  int outcome_writes_ TW_GUARDED_BY(outcomes_mutex_) = 0;
  bool retry_scheduled_ TW_GUARDED_BY(outcomes_mutex_) = false;
  std::chrono::milliseconds store_retry_delay_ TW_GUARDED_BY(outcomes_mutex_){0};
  std::mt19937_64 rng_ TW_GUARDED_BY(outcomes_mutex_){std::random_device{}()};

  // Pauses before writing again what the store refused; last, so it stops
  // first.
  TimerService timers_;
};

// The JSON body of a delivery.
std::string DeliveryBody(const TimerRecord& record);

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_DELIVERY_DISPATCHER_H_
