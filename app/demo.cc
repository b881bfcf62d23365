// SPDX-License-Identifier: Apache-2.0
#include "demo.h"

#include <CLI/CLI.hpp>
#include <signal.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "duration_flag.h"
#include "process_stats.h"
#include "tickwheel/clock.h"
#include "tickwheel/timing_wheel.h"
#include "tickwheel/wheel.h"

namespace tickwheel::app {
namespace {

using std::chrono::milliseconds;

std::atomic<bool> interrupted{false};

void OnSignal(int) { interrupted.store(true); }

std::string Thousands(std::uint64_t n) {
  const std::string digits = std::to_string(n);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// Lateness of timeouts, in 1 ms buckets, read and reset once a second.
class LatenessHistogram {
 public:
  void Add(Duration late) {
    const auto ms = std::chrono::duration_cast<milliseconds>(late).count();
    buckets_[static_cast<std::size_t>(
                 std::min<std::int64_t>(ms, kBuckets - 1))]
        .fetch_add(1, std::memory_order_relaxed);
  }
  // The 99th percentile of what was added since the last call, in ms, or -1
  // if nothing was.
  int TakeP99() {
    std::array<std::uint64_t, kBuckets> counts;
    std::uint64_t total = 0;
    for (int i = 0; i < kBuckets; ++i) {
      counts[i] = buckets_[i].exchange(0, std::memory_order_relaxed);
      total += counts[i];
    }
    if (total == 0) return -1;
    std::uint64_t seen = 0;
    for (int i = 0; i < kBuckets; ++i) {
      seen += counts[i];
      if (seen * 100 >= total * 99) return i;
    }
    return kBuckets - 1;
  }

 private:
  static constexpr int kBuckets = 10'000;
  std::array<std::atomic<std::uint64_t>, kBuckets> buckets_{};
};

class IdleConnectionsDemo {
 public:
  explicit IdleConnectionsDemo(const DemoOptions& options)
      : options_(options),
        last_beat_ns_(options.connections),
        reopen_(options.threads),
        idle_(options.interval,
              [this](const std::uint32_t& conn, const std::uint32_t& owner) {
                OnTimeout(conn, owner);
              },
              TimingWheelOptions{.workers = 1}) {}

  int Run() {
    const TimePoint start = clock_.Now();
    OpenAll();
    std::printf("opened %s connections in %.2f s\n",
                Thousands(options_.connections).c_str(),
                std::chrono::duration<double>(clock_.Now() - start).count());
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < options_.threads; ++t) {
      threads.emplace_back([this, t] { Heartbeats(t); });
    }
    PrintLoop(start);
    stop_ = true;
    for (auto& t : threads) t.join();
    idle_.Stop();
    std::printf(
        "stopped: %s heartbeats, %s timeouts, %s fired early\n",
        Thousands(total_beats_.load()).c_str(),
        Thousands(total_timeouts_.load()).c_str(),
        Thousands(early_.load()).c_str());
    return early_.load() == 0 ? 0 : 1;
  }

 private:
  std::uint32_t OwnerOf(std::uint32_t conn) const {
    return static_cast<std::uint32_t>(conn % options_.threads);
  }

  Duration RandomHeartbeat(std::mt19937_64& rng) const {
    std::uniform_int_distribution<Duration::rep> pick(
        options_.heartbeat_min.count(), options_.heartbeat_max.count());
    return Duration(pick(rng));
  }

  void OpenAll() {
    for (std::uint32_t c = 0; c < options_.connections; ++c) {
      last_beat_ns_[c].store(clock_.Now().time_since_epoch().count());
      idle_.SetTimer(c, OwnerOf(c), options_.timeout);
    }
  }

  // The timeout handler (a worker thread of the wheel): checks it is not
  // early, counts it, and asks the connection's owner to reopen the slot.
  void OnTimeout(std::uint32_t conn, std::uint32_t owner) {
    const TimePoint now = clock_.Now();
    const TimePoint due =
        TimePoint(Duration(last_beat_ns_[conn].load())) + options_.timeout;
    if (now < due) {
      early_.fetch_add(1);
    } else {
      lateness_.Add(now - due);
    }
    total_timeouts_.fetch_add(1, std::memory_order_relaxed);
    std::lock_guard lock(reopen_[owner].mutex);
    reopen_[owner].conns.push_back(conn);
  }

  // One heartbeat thread: a single-threaded Wheel<uint32_t> (the core)
  // schedules each of its connections' next heartbeat, tickless.
  void Heartbeats(std::size_t self) {
    std::mt19937_64 rng(self + 1);
    std::bernoulli_distribution goes_silent(options_.silent_rate);
    TimePoint now = clock_.Now();
    Wheel<std::uint32_t> beats(milliseconds(1), now);
    for (std::uint32_t c = static_cast<std::uint32_t>(self);
         c < options_.connections;
         c += static_cast<std::uint32_t>(options_.threads)) {
      std::uniform_int_distribution<Duration::rep> first(
          0, options_.heartbeat_max.count());
      beats.Schedule(now + Duration(first(rng)), c);
    }
    std::vector<std::uint32_t> reopened;
    while (!stop_.load(std::memory_order_relaxed)) {
      now = clock_.Now();
      {
        std::lock_guard lock(reopen_[self].mutex);
        reopened.swap(reopen_[self].conns);
      }
      for (std::uint32_t c : reopened) {
        last_beat_ns_[c].store(clock_.Now().time_since_epoch().count());
        idle_.SetTimer(c, static_cast<std::uint32_t>(self), options_.timeout);
        beats.Schedule(now + RandomHeartbeat(rng), c);
      }
      reopened.clear();
      beats.Advance(now, [&](std::uint32_t c) {
        if (goes_silent(rng)) return;  // its last heartbeat: it will time out
        // False if it timed out just now: the owner will reopen it.
        const TimePoint beat = clock_.Now();
        if (idle_.MoveTimer(c, options_.timeout)) {
          last_beat_ns_[c].store(beat.time_since_epoch().count());
          beats_.fetch_add(1, std::memory_order_relaxed);
          beats.Schedule(now + RandomHeartbeat(rng), c);
        }
      });
      // Sleep until the next heartbeat is due, but look at reopen requests
      // at least every 10 ms.
      TimePoint wake = now + milliseconds(10);
      if (auto next = beats.NextDeadline()) wake = std::min(wake, *next);
      std::this_thread::sleep_until(wake);
    }
  }

  void PrintLoop(TimePoint start) {
    std::printf("%7s  %11s  %10s  %12s  %6s  %9s  %8s  %5s\n", "time", "open",
                "timeouts/s", "heartbeats/s", "early", "late p99", "rss",
                "cpu");
    TimePoint last = clock_.Now();
    Duration last_cpu = CpuTime();
    std::uint64_t last_timeouts = 0;
    TimePoint next_print = last + std::chrono::seconds(1);
    while (!interrupted.load()) {
      if (options_.duration.count() > 0 &&
          clock_.Now() - start >= options_.duration) {
        break;
      }
      if (clock_.Now() < next_print) {
        std::this_thread::sleep_for(milliseconds(50));
        continue;
      }
      const TimePoint now = clock_.Now();
      const Duration cpu = CpuTime();
      const double wall = std::chrono::duration<double>(now - last).count();
      const std::uint64_t beats = beats_.exchange(0);
      total_beats_ += beats;
      const std::uint64_t timeouts = total_timeouts_.load();
      const int p99 = lateness_.TakeP99();
      std::printf(
          "%6llds  %11s  %10s  %12s  %6s  %9s  %5zu MB  %4.0f%%\n",
          static_cast<long long>(
              std::chrono::duration_cast<std::chrono::seconds>(now - start)
                  .count()),
          Thousands(idle_.size()).c_str(),
          Thousands(static_cast<std::uint64_t>(
                        static_cast<double>(timeouts - last_timeouts) / wall))
              .c_str(),
          Thousands(static_cast<std::uint64_t>(static_cast<double>(beats) /
                                               wall))
              .c_str(),
          Thousands(early_.load()).c_str(),
          p99 < 0 ? "-" : (std::to_string(p99) + " ms").c_str(),
          ResidentBytes() >> 20,
          100.0 * std::chrono::duration<double>(cpu - last_cpu).count() / wall);
      std::fflush(stdout);
      last = now;
      last_cpu = cpu;
      last_timeouts = timeouts;
      next_print += std::chrono::seconds(1);
    }
  }

  struct ReopenQueue {
    std::mutex mutex;
    std::vector<std::uint32_t> conns;  // guarded by mutex
  };

  const DemoOptions options_;
  SystemClock& clock_ = SystemClock::Instance();
  // When each connection's timer was last set or moved; written by its
  // owner thread after the wheel accepted the move, read by OnTimeout.
  std::vector<std::atomic<std::int64_t>> last_beat_ns_;
  std::vector<ReopenQueue> reopen_;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> beats_{0};  // since the last printed line
  std::atomic<std::uint64_t> total_beats_{0};
  std::atomic<std::uint64_t> total_timeouts_{0};
  std::atomic<std::uint64_t> early_{0};
  LatenessHistogram lateness_;
  TimingWheel<std::uint32_t, std::uint32_t> idle_;  // last: stops first
};

}  // namespace

int RunDemo(const DemoOptions& options) {
  struct sigaction action {};
  action.sa_handler = OnSignal;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  std::printf(
      "tickwheel demo: %s connections, idle timeout %s, a heartbeat every "
      "%s-%s, %.2f%% of heartbeats are a connection's last (Ctrl-C stops)\n",
      Thousands(options.connections).c_str(),
      FormatDuration(options.timeout).c_str(),
      FormatDuration(options.heartbeat_min).c_str(),
      FormatDuration(options.heartbeat_max).c_str(),
      100 * options.silent_rate);
  IdleConnectionsDemo demo(options);
  return demo.Run();
}

void AddDemoCommand(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<DemoOptions>();
  auto durations = std::make_shared<std::array<std::string, 5>>();
  CLI::App* demo = app.add_subcommand(
      "demo",
      "Simulate a server's idle-connection timeouts on the library, live");
  demo->add_option("--connections", options->connections,
                   "Connections held open")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1}, std::size_t{100'000'000}));
  demo->add_option("--timeout", (*durations)[0],
                   "Idle timeout, e.g. 30s (default 30s)");
  demo->add_option("--heartbeat-min", (*durations)[1],
                   "Shortest gap between heartbeats (default 1s)");
  demo->add_option("--heartbeat-max", (*durations)[2],
                   "Longest gap between heartbeats (default 10s)");
  demo->add_option("--interval", (*durations)[3],
                   "The timing wheel's tick (default 100ms)");
  demo->add_option("--duration", (*durations)[4],
                   "Stop after this long (default: run until Ctrl-C)");
  demo->add_option("--silent-rate", options->silent_rate,
                   "Chance that a heartbeat is a connection's last")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  demo->add_option("--threads", options->threads, "Heartbeat threads")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1}, std::size_t{64}));
  demo->callback([options, durations, &exit_code] {
    const char* names[] = {"--timeout", "--heartbeat-min", "--heartbeat-max",
                           "--interval", "--duration"};
    Duration* targets[] = {&options->timeout, &options->heartbeat_min,
                           &options->heartbeat_max, &options->interval,
                           &options->duration};
    for (int i = 0; i < 5; ++i) {
      if ((*durations)[i].empty()) continue;
      const auto parsed = ParseDuration((*durations)[i]);
      if (!parsed) {
        throw CLI::ValidationError(
            names[i], "expected a duration such as 30s or 250ms, got '" +
                          (*durations)[i] + "'");
      }
      *targets[i] = *parsed;
    }
    if (options->interval.count() <= 0 || options->timeout.count() <= 0) {
      throw CLI::ValidationError("--interval/--timeout", "must be positive");
    }
    if (options->heartbeat_min > options->heartbeat_max) {
      throw CLI::ValidationError("--heartbeat-min",
                                 "must not exceed --heartbeat-max");
    }
    exit_code = RunDemo(*options);
  });
}

}  // namespace tickwheel::app
