// SPDX-License-Identifier: Apache-2.0
// idle_timeouts: TimingWheel closing connections that stay silent too long.
// Each heartbeat pushes the connection's timeout back (MoveTimer, O(1));
// a connection that stops sending is closed `--timeout-ms` after its last
// heartbeat, on a worker thread, never earlier. (A heartbeat loop starved
// for a whole timeout would close a talking connection: the example says so
// and fails.)
//
//   build/examples/idle_timeouts/idle_timeouts --connections 10000
#include <tickwheel/timing_wheel.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "common/flags.h"

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

struct Connection {
  std::atomic<std::int64_t> last_heartbeat_ns{0};
  std::atomic<bool> closed{false};
};

std::int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

}  // namespace

int main(int argc, char** argv) {
  long long connections = 10000;
  long long timeout_ms = 1000;
  long long run_ms = 1500;
  tickwheel::examples::Flags()
      .Positive("--connections", &connections)
      .Positive("--timeout-ms", &timeout_ms)
      .Positive("--run-ms", &run_ms)
      .Parse(argc, argv);
  const auto timeout = std::chrono::milliseconds(timeout_ms);

  std::vector<Connection> conns(static_cast<std::size_t>(connections));
  std::atomic<long long> closed{0}, early{0};
  // Runs on a worker thread, under no lock of the wheel.
  tickwheel::TimingWheel<std::size_t, Connection*> idle(
      10ms, [&](const std::size_t&, Connection* const& c) {
        const std::int64_t idle_ns = NowNs() - c->last_heartbeat_ns.load();
        if (idle_ns < std::chrono::nanoseconds(timeout).count()) ++early;
        c->closed = true;
        ++closed;
      });

  // Accept every connection.
  for (std::size_t i = 0; i < conns.size(); ++i) {
    conns[i].last_heartbeat_ns = NowNs();
    idle.SetTimer(i, &conns[i], timeout);
  }
  // Heartbeats for `run_ms` (and until the silent ones are closed, 30 s at
  // most): every connection but the silent tenth sends one every
  // timeout/20, so only the silent ones time out.
  const long long silent = (connections + 9) / 10;
  const auto end = Clock::now() + std::chrono::milliseconds(run_ms);
  const auto give_up = Clock::now() + 30s;
  long long heartbeats = 0;
  while ((Clock::now() < end || closed < silent) && Clock::now() < give_up) {
    for (std::size_t i = 0; i < conns.size(); ++i) {
      if (i % 10 == 0) continue;  // silent
      conns[i].last_heartbeat_ns = NowNs();
      idle.MoveTimer(i, timeout);
      ++heartbeats;
    }
    std::this_thread::sleep_for(timeout / 20);
  }
  // Closing the rest: RemoveTimer means execute will not run for them.
  long long removed = 0;
  for (std::size_t i = 0; i < conns.size(); ++i) {
    if (i % 10 != 0 && idle.RemoveTimer(i)) ++removed;
  }
  idle.Stop();
  long long wrongly_closed = 0;
  for (std::size_t i = 0; i < conns.size(); ++i) {
    if (i % 10 != 0 && conns[i].closed) ++wrongly_closed;
  }
  std::printf("connections %lld, heartbeats %lld: %lld silent ones closed for idleness "
              "(expected %lld), %lld closed early, %lld talking ones closed, %lld removed on "
              "close\n",
              connections, heartbeats, closed.load(), silent, early.load(), wrongly_closed,
              removed);
  return closed == silent && early == 0 && wrongly_closed == 0 ? 0 : 1;
}
