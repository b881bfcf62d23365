// SPDX-License-Identifier: Apache-2.0
// Ledger: what the soak's clients were told about each timer, and what its
// receiver saw; at the end, the verdict (lost, early, fired after a cancel,
// duplicates, lateness).
//
// What counts (docs/server.md, Guarantees):
// - A timer is acknowledged when its create (single or batch) was answered
//   201/200. A create with no answer (the server died, a paused node timed
//   out) is "uncertain": it may exist, and a delivery of it is no error.
// - Its fire time is the create's, then that of each reschedule answered
//   200. A reschedule with no answer may or may not have applied; the timer
//   then may fire at either time, and the soak touches it no more.
// - A cancel answered 200 means it never fires after that answer (it was
//   pending; an attempt already made, e.g. a failed first attempt waiting for
//   its retry, stays made). 409 means too late: it is delivering or done,
//   and counts as not cancelled. No answer: either, and it is not judged.
// - Lost: acknowledged, not cancelled, due before the end, and neither
//   answered 2xx by the receiver nor a dead letter (failed after
//   max_attempts, which the server reports). Must be 0. A 2xx sent after
//   the delivery timeout counts only if the server says it took it
//   (state delivered): a node that was paused during the attempt reads the
//   answer before its timeout fires.
// - Early: received before the earliest fire time the timer could have had.
//   Must be 0.
// - Duplicates: 2xx-answered deliveries of a timer beyond its first. Allowed
//   only as the server counts them (attempts in flight at a crash, attempts
//   whose answer never came).
//
// Thread safety: every method may be called from any thread (one mutex).
#ifndef TICKWHEEL_BENCH_SOAK_LEDGER_H_
#define TICKWHEEL_BENCH_SOAK_LEDGER_H_

#include <cstdint>
#include <functional>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

namespace tickwheel::soak {

// Ids are "t<N>": N indexes the ledger.
std::string TimerId(std::uint64_t n);
// N of "t<N>", or -1 for an id the soak did not make.
std::int64_t TimerIndex(const std::string& id);

// The q-quantile (0..1) of sorted values, nearest rank; 0 when empty.
double Percentile(const std::vector<double>& sorted, double q);

struct Seen {
  std::uint32_t timer = 0;
  std::uint16_t attempt = 0;
  bool ok = false;              // the receiver answered 2xx in time
  bool late_2xx = false;        // answered 2xx after the delivery timeout
  std::int64_t fire_at_ms = 0;  // in the body
  std::int64_t received_ms = 0;
};

struct Verdict {
  std::uint64_t sent = 0;         // timers whose create was sent
  std::uint64_t created = 0;      // acknowledged
  std::uint64_t create_uncertain = 0;
  std::uint64_t rescheduled = 0;  // reschedules answered 200
  std::uint64_t cancelled = 0;    // cancels answered 200
  std::uint64_t cancel_too_late = 0;  // 409
  std::uint64_t uncertain_ops = 0;    // reschedules and cancels with no answer
  std::uint64_t expected = 0;     // acknowledged, not cancelled, not uncertain
  std::uint64_t delivered = 0;    // of those, answered 2xx by the receiver
  std::uint64_t dead_letters = 0; // of those, failed after max_attempts
  std::uint64_t late_answers_taken = 0;  // delivered by a 2xx sent past the timeout
  std::uint64_t lost = 0;
  std::uint64_t early = 0;
  std::uint64_t fired_after_cancel = 0;
  std::uint64_t duplicates = 0;       // 2xx deliveries beyond the first
  std::uint64_t repeated_attempts = 0;  // the same (timer, attempt) received twice
  std::uint64_t attempts = 0;         // every request the receiver read
  std::uint64_t unknown_deliveries = 0;  // of timers never acknowledged
  // First request of each delivered timer minus the fire_at_ms in its body.
  std::vector<double> lateness_ms;
  // First attempts (attempt 1) by the second they were received, from
  // `start_ms`: count, and lateness (received - fire_at_ms) p50, p99, max.
  struct Second {
    std::int64_t t_s = 0;
    std::uint64_t count = 0;
    double p50_ms = 0, p99_ms = 0, max_ms = 0;
  };
  std::vector<Second> series;
  std::vector<std::string> examples;  // a few lost/early ids and why
};

class Ledger {
 public:
  // A new timer id about to be created with `fire_ms` (for its index).
  std::uint64_t NewTimer();
  // The create's answer: acknowledged at `fire_ms`, refused (nothing
  // stored), or no answer.
  void Created(std::uint64_t n, std::int64_t fire_ms);
  void CreateUncertain(std::uint64_t n);
  // A reschedule to `fire_ms`: answered 200, or no answer.
  void Rescheduled(std::uint64_t n, std::int64_t fire_ms);
  void RescheduleUncertain(std::uint64_t n, std::int64_t fire_ms);
  // A cancel: 200 at `answered_ms`, 409, or no answer.
  void Cancelled(std::uint64_t n, std::int64_t answered_ms);
  void CancelTooLate(std::uint64_t n);
  void CancelUncertain(std::uint64_t n);

  void Received(const Seen& seen);

  // The acknowledged, not cancelled timers no 2xx answered yet, with the
  // latest time each could fire.
  std::vector<std::pair<std::uint64_t, std::int64_t>> Outstanding() const;
  std::int64_t LatestFireMs() const;

  // `state(n)`: timer n's state by the server, for those Outstanding()
  // returned ("" if not asked).
  Verdict Judge(const std::function<std::string(std::uint64_t)>& state,
                std::int64_t start_ms) const;

 private:
  enum class Create : std::uint8_t { kSent, kAcked, kUncertain };
  enum class Cancel : std::uint8_t { kNone, kAcked, kTooLate, kUncertain };
  struct Facts {
    Create create = Create::kSent;
    Cancel cancel = Cancel::kNone;
    bool uncertain_reschedule = false;
    bool delivered = false;  // answered 2xx in time
    bool late_2xx = false;
    std::int64_t fire_ms = 0;  // acknowledged
    std::int64_t min_fire_ms = std::numeric_limits<std::int64_t>::max();  // incl. uncertain
    std::int64_t max_fire_ms = 0;                                         // incl. uncertain
    std::int64_t cancel_ms = 0;
  };

  mutable std::mutex mutex_;
  std::vector<Facts> facts_;
  std::vector<Seen> seen_;
  std::uint64_t rescheduled_ = 0;
};

}  // namespace tickwheel::soak

#endif  // TICKWHEEL_BENCH_SOAK_LEDGER_H_
