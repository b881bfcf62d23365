// SPDX-License-Identifier: Apache-2.0
// retry_later: TimerService running a job with retries and a repeat. A
// flaky job is retried after a backoff that doubles (After), a health
// check runs every period at a fixed rate (Every), and both stop when the
// job has succeeded (Cancel).
//
//   build/examples/retry_later/retry_later --failures 3
#include <tickwheel/timer_service.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <mutex>
#include <vector>

#include "common/flags.h"

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

}  // namespace

int main(int argc, char** argv) {
  long long failures = 3;   // the job fails this many times, then succeeds
  long long backoff_ms = 20;
  tickwheel::examples::Flags()
      .Positive("--failures", &failures)
      .Positive("--backoff-ms", &backoff_ms)
      .Parse(argc, argv);

  tickwheel::TimerService timers;
  std::mutex mu;
  std::condition_variable cv;
  bool succeeded = false;
  int attempts = 0;
  std::atomic<int> checks{0};
  const auto start = Clock::now();
  std::vector<double> attempt_ms;

  // A health check every 10 ms until the job is done.
  tickwheel::TimerId health = timers.Every(10ms, [&] { ++checks; });

  // The job: fails `failures` times, then succeeds. Each failure schedules
  // the next attempt after backoff * 2^(attempt-1).
  std::function<void()> attempt = [&] {
    std::lock_guard lock(mu);
    ++attempts;
    attempt_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    if (attempts <= failures) {
      const auto delay = std::chrono::milliseconds(backoff_ms << (attempts - 1));
      std::printf("attempt %d failed; again in %lld ms\n", attempts,
                  static_cast<long long>(delay.count()));
      timers.After(delay, attempt);
      return;
    }
    succeeded = true;
    cv.notify_all();
  };
  timers.After(0ms, attempt);

  std::unique_lock lock(mu);
  const bool in_time = cv.wait_for(lock, 30s, [&] { return succeeded; });
  lock.unlock();
  timers.Cancel(health);
  timers.Stop();
  // Never early: attempt n starts no sooner than the sum of the backoffs.
  bool early = false;
  double due = 0;
  for (std::size_t i = 1; i < attempt_ms.size(); ++i) {
    due += static_cast<double>(backoff_ms << (i - 1));
    if (attempt_ms[i] < due) early = true;
  }
  std::printf("succeeded on attempt %d after %.1f ms (backoffs due at %.0f ms at the soonest); "
              "%d health checks meanwhile\n",
              attempts, attempt_ms.empty() ? 0 : attempt_ms.back(), due, checks.load());
  return in_time && attempts == failures + 1 && !early && checks > 0 ? 0 : 1;
}
