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
#include "schedule/schedule_service.h"
#include "scheduler/scheduler.h"
#include "store/timer_store.h"
#include "timer/timer_state_machine.h"
#include "tickwheel/internal/mutex.h"
#include "tickwheel/timer_service.h"

namespace tickwheel::server {

// Per attempt:
//   claim    one fenced store write per chunk of fired timers (of one shard),
//            a fired batch's queued together (TimerStore::SubmitAll):
//            Claim() of each record; stale entries are dropped.
//            The first attempt of a schedule's occurrence (server/schedule/)
//            plans its schedule in the same write: the next occurrence is
//            created there, or this one skipped or buffered by the
//            schedule's policies (then it is not sent).
//   (the scheduler let it go within its flow's limits: flow/flow_gate.h;
//   once claimed, a rate-limited flow's sends keep its pace: StartDelays)
//   send     POST {"id", "payload", "fire_at_ms", "attempt"} (and, for an
//            occurrence, "schedule" and "nominal_ms") with
//            Idempotency-Key: MessageIdOf(record) and the timer's headers
//            (and, when the client has secrets, webhook-id: the same and
//            its signature), and, for a timer with a trace context, a
//            traceparent of a new span of its trace with its tracestate
//            (timer/trace_context.h); or, for a NATS target, publish that
//            body with Nats-Msg-Id: the same (and the trace headers).
//            With the debug log level, each attempt's outcome is logged
//            (id, attempt, host, status, latency; never the URL's path,
//            headers or payload).
//   answer   the flow's slot is given back at once, with what the answer
//            says of the flow (a 429, a Retry-After): Scheduler::AttemptEnded
//   outcome  Complete() of each record, written in batches (fenced); an
//            occurrence that finished may release the one its schedule
//            buffered (overlap "buffer_one"), in the same write.
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
  struct Options {
    // How long an outcome may wait for others to share its store write
    // (unless kLingerBelow are queued): the attempt's answer was
    // already handled (its flow's slot is free); only its timer's state
    // waits. For PostgreSQL, where a write is a transaction of a few round
    // trips whatever its rows: at a flow's steady 333/s a node wrote one
    // outcome a transaction. 0: each goes as soon as a write may start.
    std::chrono::milliseconds outcome_linger{0};
  };

  // `nats` may be null. All references must outlive this.
  Dispatcher(TimerStore& store, Scheduler& scheduler, ServerClock& clock,
             WebhookClient& client, NatsPublisher* nats, Metrics& metrics,
             Options options);
  Dispatcher(TimerStore& store, Scheduler& scheduler, ServerClock& clock,
             WebhookClient& client, NatsPublisher* nats, Metrics& metrics)
      : Dispatcher(store, scheduler, clock, client, nats, metrics, Options{}) {}
  ~Dispatcher();  // Stop()

  // The scheduler's `fire` callback.
  void OnFired(std::vector<FiredTimer> due);

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
    TimePoint queued_at{};  // steady clock; for Options::outcome_linger
  };

  // The fenced write that claims `entries` (of one shard).
  TimerStore::Write ClaimWrite(std::vector<FiredTimer> entries);
  // Adds what the schedules' planning did in a committed write to the metrics.
  void CountPlanning(const PlanTotals& totals);
  // Leaves a timer that cannot be attempted here in memory for an hour.
  void Park(const DueEntry& entry);
  static constexpr std::chrono::hours kParkedFor{1};
  // A claimed attempt to send; `throttled_ms`: how long it waited for its
  // flow (the attempt log has it).
  struct Send {
    TimerRecord record;
    std::int64_t throttled_ms = 0;
  };
  // Sends each now, or when its flow's pace allows (Scheduler::StartDelays).
  void SendPaced(std::vector<Send> sends);
  void Deliver(const TimerRecord& record, std::int64_t throttled_ms);
  // `where`: the target's host:port or NATS subject, for the debug log.
  void OnAttemptDone(const std::string& id, std::uint32_t attempt, std::int64_t started_ms,
                     std::int64_t throttled_ms, const std::string& where,
                     AttemptResult result);
  // Writes queued outcomes, at most kMaxOutcomeWrites writes at a time.
  void FlushOutcomes() TW_EXCLUDES(outcomes_mutex_);
  // Options::outcome_linger: true if the queued outcomes (fewer than
  // kLingerBelow, the oldest queued less than the linger ago) should wait
  // for more; then a flush is due when the oldest's linger ends.
  bool LingerLocked() TW_REQUIRES(outcomes_mutex_);
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
  static constexpr std::size_t kLingerBelow = kOutcomeChunk / 8;

  const Options options_;
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
  bool linger_scheduled_ TW_GUARDED_BY(outcomes_mutex_) = false;
  std::chrono::milliseconds store_retry_delay_ TW_GUARDED_BY(outcomes_mutex_){0};
  std::mt19937_64 rng_ TW_GUARDED_BY(outcomes_mutex_){std::random_device{}()};

  // Pauses before writing again what the store refused; last, so it stops
  // first.
  TimerService timers_;
};

// The JSON body of a delivery.
std::string DeliveryBody(const TimerRecord& record);

// The id of a timer's deliveries: Idempotency-Key, webhook-id and
// Nats-Msg-Id. "<timer id>:<created_ms>": the same for every attempt of a
// timer, but not for a new timer that reuses the id of one retention (or a
// bulk delete) removed, so a receiver that remembers keys does not drop a
// genuinely new message. (Creation times of one id differ: a timer is
// created again only after the last one finished and was deleted.)
std::string MessageIdOf(const TimerRecord& record);

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_DELIVERY_DISPATCHER_H_
