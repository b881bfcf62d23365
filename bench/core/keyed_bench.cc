// SPDX-License-Identifier: Apache-2.0
// keyed_bench: tickwheel::TimingWheel against go-zero's keyed design (one
// loop thread fed through a queue, gozero_keyed_wheel.h), and against two
// other ways of building TimingWheel's calls (keyed_designs.h), all with a
// 1 s interval, 1M keys, 1, 2 and 4 producer threads. Phases on a fresh
// wheel: set (SetTimer of every key once), move (2 moves per key, random
// keys), remove (every key). Delays uniform in [1 s, 1 h], drawn before
// timing. Throughput counts a go-zero call only once its loop has applied
// it.
//
// Designs (--designs, comma-separated; all by default):
//   single    TimingWheel's SetTimer/MoveTimer/RemoveTimer
//   batch     TimingWheel's SetTimers/MoveTimers/RemoveTimers, --batch keys
//             per call
//   combining flat combining (keyed_designs.h), --combining-shards shards
//   prefetch  the map line prefetched before the lock (keyed_designs.h)
//   gozero    go-zero's queue-fed loop thread
//
// Latency: every 64th single call (every batch call) is timed, from the
// call to its return; a go-zero call from the call to when its loop
// applied it.
//
//   keyed_bench [--keys 1000000] [--threads 1,2,4] [--batch 256]
//               [--designs single,batch,...] [--combining-shards 2]
//
// Rows on stdout: impl,keys,metric,value with metrics
// <phase>_mops_t<threads>, <phase>_p50_ns_t<threads>, <phase>_p99_ns_t<threads>.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_clock.h"
#include "gozero_keyed_wheel.h"
#include "keyed_designs.h"
#include "random.h"
#include "tickwheel/timing_wheel.h"

namespace tickwheel::bench {
namespace {

using std::chrono::nanoseconds;
using Key = std::uint64_t;
using Value = std::uint32_t;

constexpr std::size_t kSampleEvery = 64;  // single calls timed for latency

struct Options {
  std::size_t keys = 1'000'000;
  std::vector<std::size_t> thread_counts = {1, 2, 4};
  std::size_t batch = 256;
  std::size_t combining_shards = 2;
  std::set<std::string> designs = {"single", "batch", "combining", "prefetch",
                                   "gozero"};
};

struct Plan {  // one producer's operations, drawn before timing
  std::vector<Key> set_keys;
  std::vector<Key> move_keys;
  std::vector<Duration> delays;
  std::vector<Value> values;
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
    for (auto& d : p.delays) {
      d = nanoseconds(rng.Between(1'000'000'000, 3'600'000'000'000));
    }
    p.values.assign(p.set_keys.size(), 1);
  }
  return plans;
}

// Latency samples of all threads of one phase.
class Latencies {
 public:
  void Add(const std::vector<std::int64_t>& samples) {
    std::lock_guard lock(mutex_);
    all_.insert(all_.end(), samples.begin(), samples.end());
  }
  // The q-quantile in ns (0 without samples).
  double Quantile(double q) {
    if (all_.empty()) return 0;
    std::sort(all_.begin(), all_.end());
    return static_cast<double>(
        all_[static_cast<std::size_t>(q * static_cast<double>(all_.size() - 1))]);
  }
  std::vector<std::int64_t>& all() { return all_; }

 private:
  std::mutex mutex_;
  std::vector<std::int64_t> all_;
};

// Runs fn(thread index, samples) on `threads` threads; returns the wall time
// in ns and gathers the latency samples.
template <typename F>
std::int64_t OnThreads(std::size_t threads, Latencies& latencies, F fn) {
  const std::int64_t t0 = NowNs();
  std::vector<std::thread> pool;
  for (std::size_t t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      std::vector<std::int64_t> samples;
      samples.reserve(1 << 16);
      fn(t, samples);
      latencies.Add(samples);
    });
  }
  for (auto& th : pool) th.join();
  return NowNs() - t0;
}

void Row(const char* impl, std::size_t keys, const std::string& metric, double v) {
  std::printf("%s,%zu,%s,%.6g\n", impl, keys, metric.c_str(), v);
  std::fflush(stdout);
}

void Report(const char* impl, std::size_t keys, const std::string& phase,
            std::size_t threads, std::size_t ops, std::int64_t ns,
            Latencies& latencies) {
  const std::string t = "_t" + std::to_string(threads);
  Row(impl, keys, phase + "_mops" + t, 1e3 * double(ops) / double(ns));
  Row(impl, keys, phase + "_p50_ns" + t, latencies.Quantile(0.5));
  Row(impl, keys, phase + "_p99_ns" + t, latencies.Quantile(0.99));
}

// `call(j)` for j in [0, n), every kSampleEvery-th one timed.
template <typename Call>
void Sampled(std::size_t n, std::vector<std::int64_t>& samples, Call call) {
  for (std::size_t j = 0; j < n; ++j) {
    if (j % kSampleEvery != 0) {
      call(j);
      continue;
    }
    const std::int64_t t0 = NowNs();
    call(j);
    samples.push_back(NowNs() - t0);
  }
}

// The three phases with single calls, for any design with TimingWheel's
// calls.
template <typename Wheel>
void RunSingle(const char* impl, Wheel& wheel, const Options& o, std::size_t threads,
               const std::vector<Plan>& plans) {
  Latencies set, move, remove;
  std::int64_t ns = OnThreads(threads, set, [&](std::size_t i, auto& samples) {
    const Plan& p = plans[i];
    Sampled(p.set_keys.size(), samples,
            [&](std::size_t j) { wheel.SetTimer(p.set_keys[j], 1, p.delays[j]); });
  });
  Report(impl, o.keys, "set", threads, o.keys, ns, set);
  ns = OnThreads(threads, move, [&](std::size_t i, auto& samples) {
    const Plan& p = plans[i];
    Sampled(p.move_keys.size(), samples,
            [&](std::size_t j) { wheel.MoveTimer(p.move_keys[j], p.delays[j]); });
  });
  Report(impl, o.keys, "move", threads, 2 * o.keys, ns, move);
  ns = OnThreads(threads, remove, [&](std::size_t i, auto& samples) {
    const Plan& p = plans[i];
    Sampled(p.set_keys.size(), samples,
            [&](std::size_t j) { wheel.RemoveTimer(p.set_keys[j]); });
  });
  Report(impl, o.keys, "remove", threads, o.keys, ns, remove);
}

// `call(first, count)` over [0, n) in chunks of `batch`, each timed.
template <typename Call>
void Chunked(std::size_t n, std::size_t batch, std::vector<std::int64_t>& samples,
             Call call) {
  for (std::size_t first = 0; first < n; first += batch) {
    const std::int64_t t0 = NowNs();
    call(first, std::min(batch, n - first));
    samples.push_back(NowNs() - t0);
  }
}

void RunBatch(const Options& o, std::size_t threads, std::vector<Plan>& plans) {
  TimingWheel<Key, Value> wheel(std::chrono::seconds(1), [](const Key&, const Value&) {});
  const char* impl = "tickwheel-TimingWheel-batch";
  Latencies set, move, remove;
  std::int64_t ns = OnThreads(threads, set, [&](std::size_t i, auto& samples) {
    Plan& p = plans[i];
    Chunked(p.set_keys.size(), o.batch, samples, [&](std::size_t f, std::size_t n) {
      wheel.SetTimers(std::span<const Key>(p.set_keys).subspan(f, n),
                      std::span<Value>(p.values).subspan(f, n),
                      std::span<const Duration>(p.delays).subspan(f, n));
    });
  });
  Report(impl, o.keys, "set", threads, o.keys, ns, set);
  ns = OnThreads(threads, move, [&](std::size_t i, auto& samples) {
    const Plan& p = plans[i];
    Chunked(p.move_keys.size(), o.batch, samples, [&](std::size_t f, std::size_t n) {
      wheel.MoveTimers(std::span<const Key>(p.move_keys).subspan(f, n),
                       std::span<const Duration>(p.delays).subspan(f, n));
    });
  });
  Report(impl, o.keys, "move", threads, 2 * o.keys, ns, move);
  ns = OnThreads(threads, remove, [&](std::size_t i, auto& samples) {
    const Plan& p = plans[i];
    Chunked(p.set_keys.size(), o.batch, samples, [&](std::size_t f, std::size_t n) {
      wheel.RemoveTimers(std::span<const Key>(p.set_keys).subspan(f, n));
    });
  });
  Report(impl, o.keys, "remove", threads, o.keys, ns, remove);
}

void RunGoZero(const Options& o, std::size_t threads, const std::vector<Plan>& plans) {
  GoZeroKeyedWheel<Key, Value> wheel(std::chrono::seconds(1), 300,
                                     [](const Key&, const Value&) {});
  const char* impl = "go-zero-queue";
  std::uint64_t sent = 0;
  // Time from the first call until the loop has applied all of them.
  auto phase = [&](const std::string& name, std::size_t ops, auto body) {
    Latencies unused;
    wheel.ClearLatencies();
    const std::int64_t t0 = NowNs();
    OnThreads(threads, unused, body);
    sent += ops;
    while (wheel.applied() < sent) std::this_thread::yield();
    const std::int64_t ns = NowNs() - t0;
    Latencies latencies;
    latencies.Add(wheel.latencies());
    Report(impl, o.keys, name, threads, ops, ns, latencies);
  };
  phase("set", o.keys, [&](std::size_t i, auto&) {
    const Plan& p = plans[i];
    for (std::size_t j = 0; j < p.set_keys.size(); ++j) {
      wheel.SetTimer(p.set_keys[j], 1, p.delays[j], j % kSampleEvery == 0);
    }
  });
  phase("move", 2 * o.keys, [&](std::size_t i, auto&) {
    const Plan& p = plans[i];
    for (std::size_t j = 0; j < p.move_keys.size(); ++j) {
      wheel.MoveTimer(p.move_keys[j], p.delays[j], j % kSampleEvery == 0);
    }
  });
  phase("remove", o.keys, [&](std::size_t i, auto&) {
    const Plan& p = plans[i];
    for (std::size_t j = 0; j < p.set_keys.size(); ++j) {
      wheel.RemoveTimer(p.set_keys[j], j % kSampleEvery == 0);
    }
  });
}

bool ParseList(const std::string& value, std::vector<std::size_t>& out) {
  out.clear();
  std::stringstream list(value);
  for (std::string s; std::getline(list, s, ',');) {
    const auto t = std::strtoull(s.c_str(), nullptr, 10);
    if (t == 0 || t > 64) return false;
    out.push_back(t);
  }
  return !out.empty();
}

int Usage(const std::string& error) {
  std::fprintf(stderr,
               "keyed_bench: %s\nusage: keyed_bench [--keys N] [--threads 1,2,4] "
               "[--batch 256] [--designs single,batch,combining,prefetch,gozero] "
               "[--combining-shards 2]\n",
               error.c_str());
  return 2;
}

int Main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) return Usage("missing value after " + flag);
    const std::string value = argv[i + 1];
    const auto number = std::strtoull(value.c_str(), nullptr, 10);
    if (flag == "--keys") {
      if (number == 0) return Usage("--keys must be positive, got '" + value + "'");
      o.keys = number;
    } else if (flag == "--threads") {
      if (!ParseList(value, o.thread_counts)) {
        return Usage("--threads takes counts in [1, 64], got '" + value + "'");
      }
    } else if (flag == "--batch") {
      if (number == 0) return Usage("--batch must be positive, got '" + value + "'");
      o.batch = number;
    } else if (flag == "--combining-shards") {
      if (number == 0) {
        return Usage("--combining-shards must be positive, got '" + value + "'");
      }
      o.combining_shards = number;
    } else if (flag == "--designs") {
      o.designs.clear();
      std::stringstream list(value);
      for (std::string d; std::getline(list, d, ',');) {
        if (d != "single" && d != "batch" && d != "combining" && d != "prefetch" &&
            d != "gozero") {
          return Usage("unknown design '" + d + "'");
        }
        o.designs.insert(d);
      }
    } else {
      return Usage("unknown flag " + flag);
    }
  }
  const auto noop = [](const Key&, const Value&) {};
  for (std::size_t threads : o.thread_counts) {
    std::vector<Plan> plans = MakePlans(o.keys, threads);
    if (o.designs.count("single")) {
      TimingWheel<Key, Value> wheel(std::chrono::seconds(1), noop);
      RunSingle("tickwheel-TimingWheel", wheel, o, threads, plans);
    }
    if (o.designs.count("batch")) RunBatch(o, threads, plans);
    if (o.designs.count("combining")) {
      FlatCombiningKeyedWheel<Key, Value> wheel(std::chrono::seconds(1), noop,
                                                o.combining_shards);
      RunSingle("flat-combining", wheel, o, threads, plans);
    }
    if (o.designs.count("prefetch")) {
      PrefetchingKeyedWheel<Key, Value> wheel(std::chrono::seconds(1), noop, o.keys);
      RunSingle("prefetch-before-lock", wheel, o, threads, plans);
    }
    if (o.designs.count("gozero")) RunGoZero(o, threads, plans);
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
