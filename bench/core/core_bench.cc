// SPDX-License-Identifier: Apache-2.0
// core_bench: one backend, one size, the core workloads; one CSV row per
// figure on stdout. bench/core/report.py runs it once per backend, size and
// repetition, each in its own process (so memory is measured per backend),
// and turns the rows into bench/results/*.csv, plots and docs.
//
//   core_bench --backend tickwheel --n 1000000 [--workloads fill,move,...]
//              [--seed 1] [--idle-seconds 10] [--fire-window-ms 300]
//
// Workloads: fill, memory (and fill_cold, the fill it is measured on),
// move, cancel, fire, idle, conns (the demo's idle connections; it runs for
// --idle-seconds too).
// Rows: backend,n,metric,value.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <set>
#include <stdexcept>
#include <sstream>
#include <string>

#include "asio_backend.h"
#include "gozero_list_wheel_backend.h"
#include "gozero_wheel_backend.h"
#include "indexed_heap_backend.h"
#include "libev_backend.h"
#include "libevent_backend.h"
#include "libuv_backend.h"
#include "process_stats.h"
#include "tickwheel_backend.h"
#include "workloads.h"

namespace tickwheel::bench {
namespace {

struct Options {
  std::string backend;
  std::size_t n = 0;
  std::set<std::string> workloads = {"fill", "memory", "move", "cancel", "fire"};
  std::uint64_t seed = 1;
  double idle_seconds = 10;
  double fire_window_ms = 300;
};

void Row(const Options& o, const char* metric, double value) {
  std::printf("%s,%zu,%s,%.6g\n", o.backend.c_str(), o.n, metric, value);
}

template <Backend B>
void Run(const Options& o) {
  Random rng(o.seed);
  // First, in a process that has allocated nothing big yet: the resident
  // memory of the backend grown to n timers as they arrive.
  if (o.workloads.count("memory")) {
    const std::size_t rss0 = app::ResidentBytes();
    B b(o.n, NowNs(), Storage::kOnDemand);
    const double cold = Fill(b, o.n, rng);
    const std::size_t rss1 = app::ResidentBytes();
    // Insert into storage that grows as it goes: page faults included.
    Row(o, "fill_cold_ns", cold);
    Row(o, "bytes_per_timer",
        static_cast<double>(rss1 - rss0) / static_cast<double>(o.n) -
            static_cast<double>(B::kHarnessBytesPerTimer));
  }
  if (o.workloads.count("fill") || o.workloads.count("move") ||
      o.workloads.count("cancel")) {
    B b(o.n, NowNs(), Storage::kPrefault);
    const double fill = Fill(b, o.n, rng);
    if (o.workloads.count("fill")) Row(o, "fill_ns", fill);
    if (o.workloads.count("move")) Row(o, "move_ns", Move(b, o.n, 2 * o.n, rng));
    if (o.workloads.count("cancel")) {
      Row(o, "cancel_ns", Cancel(b, o.n, o.n / 2, rng));
    }
  }
  if (o.workloads.count("fire")) {
    const FireResult r = Fire<B>(
        o.n, static_cast<std::int64_t>(o.fire_window_ms * 1e6), rng);
    Row(o, "fire_cpu_ns", r.cpu_ns_per_timer);
    Row(o, "fire_wall_ms", r.wall_ms);
    Row(o, "fire_preempted", static_cast<double>(r.preempted));
    const auto& late = r.lateness_ns;
    auto at = [&](double q) {
      const auto i = static_cast<std::size_t>(q * static_cast<double>(late.size() - 1));
      return static_cast<double>(late[i]) / 1e3;
    };
    Row(o, "late_p50_us", at(0.5));
    Row(o, "late_p99_us", at(0.99));
    Row(o, "late_max_us", at(1.0));
    // The distribution, for the plot.
    for (double q : {0.0, 0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8,
                     0.9, 0.95, 0.98, 0.99, 0.995, 0.999, 0.9999, 1.0}) {
      char name[32];
      std::snprintf(name, sizeof name, "late_q%g_us", q * 100);
      Row(o, name, at(q));
    }
  }
  if (o.workloads.count("conns")) {
    if (o.idle_seconds > 20) throw std::runtime_error("conns: --idle-seconds must be <= 20");
    const ConnectionsResult r = Connections<B>(
        o.n, static_cast<std::int64_t>(o.idle_seconds * 1e9), rng);
    Row(o, "conns_cpu_percent", r.cpu_percent);
    Row(o, "conns_moves_per_s", r.moves_per_second);
  }
  if (o.workloads.count("idle")) {
    Row(o, "idle_cpu_percent",
        Idle<B>(o.n, static_cast<std::int64_t>(o.idle_seconds * 1e9), rng));
  }
  std::fflush(stdout);
}

int Usage(const char* error) {
  std::fprintf(stderr,
               "core_bench: %s\nusage: core_bench --backend "
               "tickwheel|go-zero-wheel|go-zero-wheel-slab|indexed-heap|libevent|libuv|libev|asio "
               "--n N [--workloads fill,memory,move,cancel,fire,idle,conns] "
               "[--seed S] [--idle-seconds S] [--fire-window-ms MS]\n",
               error);
  return 2;
}

int Main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) return Usage(("missing value after " + flag).c_str());
    const std::string value = argv[++i];
    char* end = nullptr;
    if (flag == "--backend") {
      o.backend = value;
    } else if (flag == "--n") {
      o.n = std::strtoull(value.c_str(), &end, 10);
      if (*end != '\0' || o.n == 0 || o.n >= (1ull << 31)) {
        return Usage(("--n must be in [1, 2^31), got '" + value + "'").c_str());
      }
    } else if (flag == "--workloads") {
      o.workloads.clear();
      std::stringstream list(value);
      for (std::string w; std::getline(list, w, ',');) {
        if (w != "fill" && w != "memory" && w != "move" && w != "cancel" &&
            w != "fire" && w != "idle" && w != "conns") {
          return Usage(("unknown workload '" + w + "'").c_str());
        }
        o.workloads.insert(w);
      }
    } else if (flag == "--seed") {
      o.seed = std::strtoull(value.c_str(), &end, 10);
    } else if (flag == "--idle-seconds") {
      o.idle_seconds = std::strtod(value.c_str(), &end);
      if (*end != '\0' || !(o.idle_seconds > 0)) {
        return Usage(("--idle-seconds must be positive, got '" + value + "'").c_str());
      }
    } else if (flag == "--fire-window-ms") {
      o.fire_window_ms = std::strtod(value.c_str(), &end);
      if (*end != '\0' || !(o.fire_window_ms > 0) || o.fire_window_ms > 4000) {
        return Usage(("--fire-window-ms must be in (0, 4000], got '" + value + "'").c_str());
      }
    } else {
      return Usage(("unknown flag " + flag).c_str());
    }
  }
  if (o.n == 0) return Usage("--n is required");
  const std::string& b = o.backend;
  if (b == TickwheelBackend::kName) {
    Run<TickwheelBackend>(o);
  } else if (b == GoZeroListWheelBackend::kName) {
    Run<GoZeroListWheelBackend>(o);
  } else if (b == GoZeroWheelBackend::kName) {
    Run<GoZeroWheelBackend>(o);
  } else if (b == IndexedHeapBackend::kName) {
    Run<IndexedHeapBackend>(o);
  } else if (b == LibeventBackend::kName) {
    Run<LibeventBackend>(o);
  } else if (b == LibuvBackend::kName) {
    Run<LibuvBackend>(o);
  } else if (b == LibevBackend::kName) {
    Run<LibevBackend>(o);
  } else if (b == AsioBackend::kName) {
    Run<AsioBackend>(o);
  } else {
    return Usage(("unknown backend '" + b + "'").c_str());
  }
  return 0;
}

}  // namespace
}  // namespace tickwheel::bench

int main(int argc, char** argv) {
  try {
    return tickwheel::bench::Main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "core_bench: %s\n", e.what());
    return 1;
  }
}
