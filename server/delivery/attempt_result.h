// SPDX-License-Identifier: Apache-2.0
// What one delivery attempt came to, as the webhook client and the NATS
// publisher report it to the dispatcher.
#ifndef TICKWHEEL_SERVER_DELIVERY_ATTEMPT_RESULT_H_
#define TICKWHEEL_SERVER_DELIVERY_ATTEMPT_RESULT_H_

#include <cstdint>
#include <string>

namespace tickwheel::server {

struct AttemptResult {
  enum class Kind {
    kDelivered,  // a 2xx answer (or a JetStream acknowledgement)
    kFailed,     // anything else: retried with backoff, or a dead letter
    // Not attempted, or given up without an outcome because the server is
    // stopping: nothing is written, the timer stays `delivering` and is
    // attempted again at the next start.
    kAborted,
  };
  Kind kind = Kind::kFailed;
  int status = 0;            // HTTP status; 0 if none was read
  std::string error;         // why not delivered
  double latency_ms = 0;     // request sent to answer read
  // A 429 or 503 said not to retry before this long (Retry-After); 0: no such answer.
  std::int64_t retry_after_ms = 0;
  // The request was sent (wholly or partly) but no answer was read: the
  // receiver may have processed it, so the retry may be a duplicate.
  bool unanswered = false;

  static AttemptResult Aborted(std::string why) {
    AttemptResult r;
    r.kind = Kind::kAborted;
    r.error = std::move(why);
    return r;
  }
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_DELIVERY_ATTEMPT_RESULT_H_
