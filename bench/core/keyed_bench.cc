// keyed_bench: tickwheel::TimingWheel against go-zero's keyed design (one
// loop thread fed through a queue, gozero_keyed_wheel.h), both with a 1 s
// interval, 1M keys, 1, 2 and 4 producer threads. Phases on a fresh wheel:
// set (SetTimer of every key once), move (2 moves per key, random keys),
// remove (every key). Delays uniform in [1 s, 1 h], drawn before timing.
// Throughput counts a go-zero call only once its loop has applied it.
//
//   keyed_bench [--keys 1000000] [--threads 1,2,4]
//
// Rows on stdout: impl,keys,metric,value with metric <phase>_mops_t<threads>.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_clock.h"
#include "gozero_keyed_wheel.h"
#include "random.h"
#include "tickwheel/timing_wheel.h"

namespace tickwheel::bench {
namespace {

using std::chrono::nanoseconds;
using Key = std::uint64_t;

struct Plan {  // one producer's operations, drawn before timing
  std::vector<Key> set_keys;
  std::vector<Key> move_keys;
  std::vector<std::int64_t> delays;
};

std::vector<Plan> MakePlans(std::size_t keys, std::size_t threads) {
  std::vector<Plan> plans(threads);
  for (std::size_t t = 0; t < threads; ++t) {
    Random rng(t + 11);
    Plan& p = plans[t];
    for (Key k = t; k < keys; k += threads) p.set_keys.push_back(k * 2654435761u);
    p.move_keys.resize(2 * p.set_keys.size());
    for (auto& k : p.move_keys) k = rng.Below(keys) * 2654435761u;
    p.delays.resize(p.move_keys.size());
    for (auto& d : p.delays) d = rng.Between(1'000'000'000, 3'600'000'000'000);
  }
  return plans;
}

// Runs fn(thread index) on `threads` threads; returns the wall time in ns.
template <typename F>
std::int64_t OnThreads(std::size_t threads, F fn) {
  const std::int64_t t0 = NowNs();
  std::vector<std::thread> pool;
  for (std::size_t t = 0; t < threads; ++t) pool.emplace_back([&, t] { fn(t); });
  for (auto& th : pool) th.join();
  return NowNs() - t0;
}

void Row(const char* impl, std::size_t keys, const std::string& metric, double v) {
  std::printf("%s,%zu,%s,%.6g\n", impl, keys, metric.c_str(), v);
  std::fflush(stdout);
}

void RunTickwheel(std::size_t keys, std::size_t threads, const std::vector<Plan>& plans) {
  TimingWheel<Key, std::uint32_t> wheel(std::chrono::seconds(1),
                                        [](const Key&, const std::uint32_t&) {});
  const char* impl = "tickwheel-TimingWheel";
  const std::string t = "_t" + std::to_string(threads);
  auto mops = [](std::size_t ops, std::int64_t ns) { return 1e3 * double(ops) / double(ns); };
  std::int64_t ns = OnThreads(threads, [&](std::size_t i) {
    const Plan& p = plans[i];
    for (std::size_t j = 0; j < p.set_keys.size(); ++j) {
      wheel.SetTimer(p.set_keys[j], 1, nanoseconds(p.delays[j]));
    }
  });
  Row(impl, keys, "set_mops" + t, mops(keys, ns));
  ns = OnThreads(threads, [&](std::size_t i) {
    const Plan& p = plans[i];
    for (std::size_t j = 0; j < p.move_keys.size(); ++j) {
      wheel.MoveTimer(p.move_keys[j], nanoseconds(p.delays[j]));
    }
  });
  Row(impl, keys, "move_mops" + t, mops(2 * keys, ns));
  ns = OnThreads(threads, [&](std::size_t i) {
    for (Key k : plans[i].set_keys) wheel.RemoveTimer(k);
  });
  Row(impl, keys, "remove_mops" + t, mops(keys, ns));
}

void RunGoZero(std::size_t keys, std::size_t threads, const std::vector<Plan>& plans) {
  GoZeroKeyedWheel<Key, std::uint32_t> wheel(std::chrono::seconds(1), 300,
                                             [](const Key&, const std::uint32_t&) {});
  const char* impl = "go-zero-queue";
  const std::string t = "_t" + std::to_string(threads);
  std::uint64_t sent = 0;
  auto finish = [&](std::size_t ops, std::int64_t t0) {
    sent += ops;
    while (wheel.applied() < sent) std::this_thread::yield();
    return 1e3 * double(ops) / double(NowNs() - t0);
  };
  std::int64_t t0 = NowNs();
  OnThreads(threads, [&](std::size_t i) {
    const Plan& p = plans[i];
    for (std::size_t j = 0; j < p.set_keys.size(); ++j) {
      wheel.SetTimer(p.set_keys[j], 1, nanoseconds(p.delays[j]));
    }
  });
  Row(impl, keys, "set_mops" + t, finish(keys, t0));
  t0 = NowNs();
  OnThreads(threads, [&](std::size_t i) {
    const Plan& p = plans[i];
    for (std::size_t j = 0; j < p.move_keys.size(); ++j) {
      wheel.MoveTimer(p.move_keys[j], nanoseconds(p.delays[j]));
    }
  });
  Row(impl, keys, "move_mops" + t, finish(2 * keys, t0));
  t0 = NowNs();
  OnThreads(threads, [&](std::size_t i) {
    for (Key k : plans[i].set_keys) wheel.RemoveTimer(k);
  });
  Row(impl, keys, "remove_mops" + t, finish(keys, t0));
}

int Main(int argc, char** argv) {
  std::size_t keys = 1'000'000;
  std::vector<std::size_t> thread_counts = {1, 2, 4};
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--keys") {
      keys = std::strtoull(value.c_str(), nullptr, 10);
      if (keys == 0) {
        std::fprintf(stderr, "keyed_bench: --keys must be positive, got '%s'\n", value.c_str());
        return 2;
      }
    } else if (flag == "--threads") {
      thread_counts.clear();
      std::stringstream list(value);
      for (std::string s; std::getline(list, s, ',');) {
        const auto t = std::strtoull(s.c_str(), nullptr, 10);
        if (t == 0 || t > 64) {
          std::fprintf(stderr, "keyed_bench: --threads takes counts in [1, 64], got '%s'\n",
                       s.c_str());
          return 2;
        }
        thread_counts.push_back(t);
      }
    } else {
      std::fprintf(stderr, "keyed_bench: unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  for (std::size_t threads : thread_counts) {
    const std::vector<Plan> plans = MakePlans(keys, threads);
    RunTickwheel(keys, threads, plans);
    RunGoZero(keys, threads, plans);
  }
  return 0;
}

}  // namespace
}  // namespace tickwheel::bench

int main(int argc, char** argv) {
  try {
    return tickwheel::bench::Main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "keyed_bench: %s\n", e.what());
    return 1;
  }
}
