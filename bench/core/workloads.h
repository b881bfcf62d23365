// SPDX-License-Identifier: Apache-2.0
// The core workloads, written once against the Backend interface.
//
// Every workload draws its random deadlines and ids before timing them, in
// batches of up to 4096 operations, and reads the clock twice per batch
// (about 40 ns each here), so the harness costs well under 0.1 ns per
// operation. Deadlines are absolute times on NowNs()'s clock.
#ifndef TICKWHEEL_BENCH_CORE_WORKLOADS_H_
#define TICKWHEEL_BENCH_CORE_WORKLOADS_H_

#include <sys/resource.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "backend.h"
#include "bench_clock.h"
#include "fire_log.h"
#include "random.h"

namespace tickwheel::bench {

inline constexpr std::size_t kBatch = 4096;
inline constexpr std::int64_t kMs = 1'000'000;
inline constexpr std::int64_t kSecond = 1'000'000'000;
// fill/move/cancel deadlines: uniform in [1 s, 1 h] from the operation.
inline constexpr std::int64_t kFarMin = kSecond;
inline constexpr std::int64_t kFarMax = 3600 * kSecond;

// Inserts ids [0, n) due in U[1 s, 1 h]. Returns ns per insert.
// Untimed set-up: inserts ids [0, n), id j due at deadline(j, now), the
// clock read once per batch as in the timed workloads.
template <Backend B, typename Deadline>
void InsertAll(B& b, std::size_t n, Deadline deadline) {
  for (std::size_t i = 0; i < n; i += kBatch) {
    const std::int64_t now = NowNs();
    b.SetNow(now);
    const std::size_t end = std::min(n, i + kBatch);
    for (std::size_t j = i; j < end; ++j) {
      b.Insert(static_cast<std::uint32_t>(j), deadline(j, now));
    }
  }
}

template <Backend B>
double Fill(B& b, std::size_t n, Random& rng) {
  std::int64_t delay[kBatch];
  std::int64_t total = 0;
  for (std::size_t first = 0; first < n; first += kBatch) {
    const std::size_t m = std::min(kBatch, n - first);
    for (std::size_t i = 0; i < m; ++i) delay[i] = rng.Between(kFarMin, kFarMax);
    const std::int64_t t0 = NowNs();
    b.SetNow(t0);
    for (std::size_t i = 0; i < m; ++i) {
      b.Insert(static_cast<std::uint32_t>(first + i), t0 + delay[i]);
    }
    total += NowNs() - t0;
  }
  return static_cast<double>(total) / static_cast<double>(n);
}

// `ops` times, moves a uniformly random pending id to a new deadline in
// U[1 s, 1 h] (the heartbeat pushing back an idle timeout). REQUIRES: ids
// [0, n) pending. Returns ns per move.
template <Backend B>
double Move(B& b, std::size_t n, std::size_t ops, Random& rng) {
  std::uint32_t id[kBatch];
  std::int64_t delay[kBatch];
  std::int64_t total = 0;
  for (std::size_t done = 0; done < ops; done += kBatch) {
    const std::size_t m = std::min(kBatch, ops - done);
    for (std::size_t i = 0; i < m; ++i) {
      id[i] = static_cast<std::uint32_t>(rng.Below(n));
      delay[i] = rng.Between(kFarMin, kFarMax);
    }
    const std::int64_t t0 = NowNs();
    b.SetNow(t0);
    for (std::size_t i = 0; i < m; ++i) b.Move(id[i], t0 + delay[i]);
    total += NowNs() - t0;
  }
  return static_cast<double>(total) / static_cast<double>(ops);
}

// Cancels `ops` distinct random ids of [0, n). REQUIRES: ids [0, n) pending,
// ops <= n / 2 (so drawing distinct ids stays cheap). Returns ns per cancel;
// the ids cancelled are marked in `*cancelled_ids` if given.
template <Backend B>
double Cancel(B& b, std::size_t n, std::size_t ops, Random& rng,
              std::vector<bool>* cancelled_ids = nullptr) {
  std::vector<bool> cancelled(n);
  std::uint32_t id[kBatch];
  std::int64_t total = 0;
  for (std::size_t done = 0; done < ops; done += kBatch) {
    const std::size_t m = std::min(kBatch, ops - done);
    for (std::size_t i = 0; i < m; ++i) {
      std::uint32_t pick;
      do {
        pick = static_cast<std::uint32_t>(rng.Below(n));
      } while (cancelled[pick]);
      cancelled[pick] = true;
      id[i] = pick;
    }
    const std::int64_t t0 = NowNs();
    b.SetNow(t0);
    for (std::size_t i = 0; i < m; ++i) b.Cancel(id[i]);
    total += NowNs() - t0;
  }
  if (cancelled_ids != nullptr) *cancelled_ids = std::move(cancelled);
  return static_cast<double>(total) / static_cast<double>(ops);
}

struct FireResult {
  double cpu_ns_per_timer = 0;  // process CPU time of the loop / n
  double wall_ms = 0;           // from the first deadline to the last firing
  // Times the scheduler took the CPU from the loop (involuntary context
  // switches): on a shared machine each can delay timers by milliseconds.
  long preempted = 0;
  // Lateness of every timer, sorted: the time the loop turn that fired it
  // returned, minus its deadline (an upper bound: the callback reads no
  // clock).
  std::vector<std::int64_t> lateness_ns;
};

inline long InvoluntarySwitches() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_nivcsw;
}

// Process CPU time so far (all threads), in ns.
inline std::int64_t CpuNowNs() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return std::int64_t{ts.tv_sec} * kSecond + ts.tv_nsec;
}

// Verifies that `log` holds each of ids [0, n) exactly once (and, if it has
// timestamps, that none fired before `deadline(id)`); throws
// std::runtime_error naming the first violation.
template <typename DeadlineOf>
void CheckFiredOnce(const char* backend, const FireLog& log, std::size_t n,
                    DeadlineOf deadline) {
  const std::string who = std::string(backend) + ": ";
  if (log.overflowed() || log.size() != n) {
    throw std::runtime_error(who + std::to_string(log.size()) +
                             " timers fired (or more), expected " +
                             std::to_string(n));
  }
  std::vector<bool> seen(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t id = log.id(i);
    if (id >= n || seen[id]) {
      throw std::runtime_error(who + "timer " + std::to_string(id) +
                               " fired twice or was never scheduled");
    }
    seen[id] = true;
    if (log.has_times() && log.time(i) < deadline(id)) {
      throw std::runtime_error(who + "timer " + std::to_string(id) +
                               " fired " + std::to_string(deadline(id) - log.time(i)) +
                               " ns early");
    }
  }
}

// The fire loop starts this long before the first deadline, as an event
// loop would be running already: long enough for work a backend does ahead
// of time (Wheel moves a level-1 slot, 64 ticks, down when it comes up).
inline constexpr std::int64_t kFireLoopLead = 70 * kMs;

// n timers due uniformly within `window_ns`, starting far enough ahead that
// inserting them all is done first; from kFireLoopLead before the first
// deadline, runs the loop (RunOnce) until all have fired. Throws
// std::runtime_error if one is lost, fires twice or early.
template <Backend B>
FireResult Fire(std::size_t n, std::int64_t window_ns, Random& rng) {
  std::vector<std::uint32_t> offset(n);
  for (auto& o : offset) o = static_cast<std::uint32_t>(rng.Between(0, window_ns));
  std::int64_t lead = kFireLoopLead + 100 * kMs + static_cast<std::int64_t>(n) * 500;
  for (int attempt = 0;; ++attempt) {
    const std::int64_t start = NowNs();
    const std::int64_t first = start + lead;
    B b(n, start, Storage::kPrefault);
    InsertAll(b, n, [&](std::size_t j, std::int64_t) { return first + offset[j]; });
    if (NowNs() > first - kFireLoopLead - 5 * kMs) {  // took too long: start later
      if (attempt == 3) throw std::runtime_error("fire: cannot insert in time");
      lead *= 3;
      continue;
    }
    SleepUntilNs(first - kFireLoopLead);
    FireLog log(n, /*timestamps=*/false);
    std::vector<std::pair<std::size_t, std::int64_t>> turns;  // (fired, time)
    turns.reserve(1 << 16);
    const long switches0 = InvoluntarySwitches();
    const std::int64_t cpu0 = CpuNowNs();
    while (log.size() < n && b.RunOnce(log)) {
      turns.emplace_back(log.size(), NowNs());
    }
    const std::int64_t cpu1 = CpuNowNs();
    const long switches1 = InvoluntarySwitches();
    CheckFiredOnce(B::kName, log, n, [](std::uint32_t) { return 0; });
    FireResult r;
    r.cpu_ns_per_timer = static_cast<double>(cpu1 - cpu0) / static_cast<double>(n);
    r.wall_ms = static_cast<double>(turns.back().second - first) / 1e6;
    r.preempted = switches1 - switches0;
    r.lateness_ns.resize(n);
    std::size_t i = 0;
    for (const auto& [fired, time] : turns) {
      for (; i < fired; ++i) {
        const std::uint32_t id = log.id(i);
        r.lateness_ns[i] = time - (first + offset[id]);
        if (r.lateness_ns[i] < 0) {
          throw std::runtime_error(std::string(B::kName) + ": timer " +
                                   std::to_string(id) + " fired early");
        }
      }
    }
    std::sort(r.lateness_ns.begin(), r.lateness_ns.end());
    return r;
  }
}

// n timers due in U[1 h, 2 h], then `wait_ns` of the event loop with
// nothing due (a wake-up timer ends it). Returns the CPU used as a
// percentage of one core.
template <Backend B>
double Idle(std::size_t n, std::int64_t wait_ns, Random& rng) {
  const std::int64_t start = NowNs();
  B b(n + 1, start, Storage::kPrefault);
  InsertAll(b, n, [&](std::size_t, std::int64_t now) {
    return now + rng.Between(3600 * kSecond, 7200 * kSecond);
  });
  const std::int64_t t0 = NowNs();
  b.SetNow(t0);
  b.Insert(static_cast<std::uint32_t>(n), t0 + wait_ns);
  FireLog log(1, /*timestamps=*/false);
  const std::int64_t cpu0 = CpuNowNs();
  while (log.size() == 0 && b.RunOnce(log)) {
  }
  const std::int64_t cpu1 = CpuNowNs();
  const std::int64_t t1 = NowNs();
  if (log.size() != 1 || log.id(0) != n) {
    throw std::runtime_error(std::string(B::kName) +
                             ": idle: a timer due in an hour fired");
  }
  return 100.0 * static_cast<double>(cpu1 - cpu0) / static_cast<double>(t1 - t0);
}

struct ConnectionsResult {
  double cpu_percent = 0;     // CPU of the process, % of one core
  double moves_per_second = 0;
};

// The demo's idle connections, on one event loop: n connections, each with
// an idle timeout 30 s after its last heartbeat; heartbeats arrive every
// 1-10 s per connection (on average n / 5.5 s in all, spread evenly: each
// millisecond the loop moves that many random connections' timeouts to 30 s
// from now), for `run_ns` of real time. A loop wake-up every millisecond (a
// timer re-armed each time, as a server's periodic work would be) paces it.
// Returns the CPU the whole loop used. REQUIRES: run_ns <= 20 s (no
// connection times out); throws std::runtime_error if one does.
template <Backend B>
ConnectionsResult Connections(std::size_t n, std::int64_t run_ns, Random& rng) {
  constexpr std::int64_t kTimeout = 30 * kSecond;
  const std::int64_t start = NowNs();
  B b(n + 1, start, Storage::kPrefault);
  // Opened with a last heartbeat up to 10 s ago.
  InsertAll(b, n, [&](std::size_t, std::int64_t now) {
    return now + kTimeout - rng.Between(0, 10 * kSecond);
  });
  const auto tick = static_cast<std::uint32_t>(n);
  const double per_ms = static_cast<double>(n) / 5500.0;
  FireLog log(n + 1 + static_cast<std::size_t>(run_ns / kMs) + 16, false);
  double owed = 0;
  std::size_t moves = 0;
  std::uint32_t id[kBatch];
  const std::int64_t t0 = NowNs();
  const std::int64_t cpu0 = CpuNowNs();
  std::int64_t next = t0;
  while (next < t0 + run_ns) {
    next += kMs;
    const std::int64_t now = NowNs();
    b.SetNow(now);
    owed += per_ms;
    const auto m = std::min(kBatch, static_cast<std::size_t>(owed));
    owed -= static_cast<double>(m);
    for (std::size_t i = 0; i < m; ++i) id[i] = static_cast<std::uint32_t>(rng.Below(n));
    for (std::size_t i = 0; i < m; ++i) b.Move(id[i], now + kTimeout);
    moves += m;
    b.Insert(tick, next);
    const std::size_t before = log.size();
    bool woke = false;
    while (!woke && b.RunOnce(log)) {
      for (std::size_t k = before; k < log.size(); ++k) {
        if (log.id(k) != tick) {
          // Every connection heard from within the last 10 s + run time.
          throw std::runtime_error(
              std::string(B::kName) + ": connection " + std::to_string(log.id(k)) +
              " timed out early, " + std::to_string((NowNs() - t0) / kMs) +
              " ms into the run");
        }
        woke = true;
      }
    }
  }
  const std::int64_t cpu1 = CpuNowNs();
  const std::int64_t t1 = NowNs();
  ConnectionsResult r;
  r.cpu_percent = 100.0 * static_cast<double>(cpu1 - cpu0) / static_cast<double>(t1 - t0);
  r.moves_per_second = static_cast<double>(moves) * 1e9 / static_cast<double>(t1 - t0);
  return r;
}

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_BENCH_CORE_WORKLOADS_H_
