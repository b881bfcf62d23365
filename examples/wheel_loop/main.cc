// SPDX-License-Identifier: Apache-2.0
// wheel_loop: Wheel<T> in a hand-written event loop. The loop owns its
// timers (request deadlines here) and never ticks: it sleeps until
// NextDeadline(), then Advance()s to the time it woke up. Work arrives on a
// queue from another thread, as sockets would wake an epoll loop.
//
//   build/examples/wheel_loop/wheel_loop --requests 2000
//
// It prints how many requests finished, how many timed out, and how late
// the latest timeout fired (never early: Wheel's contract, checked here).
#include <tickwheel/wheel.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/flags.h"

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// What the loop is told: a request started (with its deadline), or one
// answered before its deadline.
struct Event {
  enum Kind { kStart, kAnswered, kDone } kind;
  int request = 0;
  Clock::time_point deadline{};
};

// A queue the loop waits on until an event comes or `until` passes.
class Inbox {
 public:
  void Push(Event e) {
    {
      std::lock_guard lock(mu_);
      events_.push_back(e);
    }
    cv_.notify_one();
  }
  // Everything queued, after waiting until there is something or `until`.
  std::deque<Event> Wait(std::optional<Clock::time_point> until) {
    std::unique_lock lock(mu_);
    auto ready = [&] { return !events_.empty(); };
    if (until) {
      cv_.wait_until(lock, *until, ready);
    } else {
      cv_.wait(lock, ready);
    }
    return std::exchange(events_, {});
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Event> events_;
};

}  // namespace

int main(int argc, char** argv) {
  long long requests = 2000;
  long long deadline_ms = 50;
  tickwheel::examples::Flags()
      .Positive("--requests", &requests)
      .Positive("--deadline-ms", &deadline_ms)
      .Parse(argc, argv);

  Inbox inbox;
  // The clients: each request is answered after a random 0..2x its
  // deadline, so about half time out.
  std::thread clients([&] {
    std::mt19937 rng(42);
    std::uniform_int_distribution<long long> answer_ms(0, 2 * deadline_ms);
    std::vector<std::pair<Clock::time_point, int>> answers;
    for (int i = 0; i < requests; ++i) {
      const auto now = Clock::now();
      inbox.Push({Event::kStart, i, now + std::chrono::milliseconds(deadline_ms)});
      answers.emplace_back(now + std::chrono::milliseconds(answer_ms(rng)), i);
      std::this_thread::sleep_for(100us);
    }
    std::sort(answers.begin(), answers.end());
    for (auto [when, i] : answers) {
      std::this_thread::sleep_until(when);
      inbox.Push({Event::kAnswered, i, {}});
    }
    inbox.Push({Event::kDone, 0, {}});
  });

  // The loop: one thread, one Wheel, no lock around it.
  tickwheel::Wheel<int> deadlines(1ms, Clock::now());
  std::unordered_map<int, std::pair<tickwheel::TimerId, Clock::time_point>> open;
  long long answered = 0, timed_out = 0, early = 0;
  Clock::duration latest_lateness{0};
  bool done = false;
  while (!done || !deadlines.empty()) {
    for (const Event& e : inbox.Wait(deadlines.NextDeadline())) {
      if (e.kind == Event::kStart) {
        open[e.request] = {deadlines.Schedule(e.deadline, e.request), e.deadline};
      } else if (e.kind == Event::kAnswered) {
        auto it = open.find(e.request);
        if (it == open.end()) continue;  // timed out already
        deadlines.Cancel(it->second.first);
        open.erase(it);
        ++answered;
      } else {
        done = true;
      }
    }
    const auto now = Clock::now();
    deadlines.Advance(now, [&](int request) {
      const auto deadline = open.at(request).second;
      if (now < deadline) ++early;
      latest_lateness = std::max(latest_lateness, now - deadline);
      open.erase(request);
      ++timed_out;
    });
    if (done && open.empty()) break;
  }
  clients.join();
  std::printf("requests %lld: answered %lld, timed out %lld, fired early %lld, "
              "latest timeout %.1f ms after its deadline\n",
              requests, answered, timed_out, early,
              std::chrono::duration<double, std::milli>(latest_lateness).count());
  return early == 0 && answered + timed_out == requests ? 0 : 1;
}
