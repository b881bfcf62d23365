// SPDX-License-Identifier: Apache-2.0
// memory_probe: the physical limits the core workloads run into on this
// machine, measured the way the workloads touch memory.
//
//   dependent_ns     a chain of random loads, each needing the last (a
//                    pointer chase): the full latency of one random access
//   independent_ns   random read-modify-writes of 32-byte records that do
//                    not depend on each other (what N moves or cancels of
//                    random timers do at best: the core overlaps them)
//   clock_ns         one clock_gettime(CLOCK_MONOTONIC)
//
// over a table of n 32-byte records (a timer's node), on transparent huge
// pages like Wheel's slab. Rows: probe,n,metric,value.
#include <sys/mman.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <vector>

#include "bench_clock.h"
#include "random.h"

namespace tickwheel::bench {
namespace {

volatile std::uint64_t g_sink;  // keeps the measured loops from being removed

struct Record {
  std::uint64_t next;
  std::uint64_t payload[3];
};

Record* AllocateRecords(std::size_t n) {
  const std::size_t bytes = (n * sizeof(Record) + (2u << 20) - 1) & ~((2u << 20) - 1);
  void* p = aligned_alloc(2u << 20, bytes);
  if (p == nullptr) std::abort();
  madvise(p, bytes, MADV_HUGEPAGE);
  std::memset(p, 0, bytes);
  return static_cast<Record*>(p);
}

void Probe(std::size_t n) {
  Record* r = AllocateRecords(n);
  Random rng(42);
  // One random cycle through all records (Sattolo's shuffle).
  std::vector<std::uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  for (std::size_t i = n - 1; i > 0; --i) std::swap(order[i], order[rng.Below(i)]);
  for (std::size_t i = 0; i < n; ++i) r[order[i]].next = order[(i + 1) % n];
  const std::size_t steps = 4'000'000;
  std::uint64_t at = order[0];
  std::int64_t t0 = NowNs();
  for (std::size_t i = 0; i < steps; ++i) at = r[at].next;
  const double dependent = double(NowNs() - t0) / double(steps);
  std::vector<std::uint32_t> idx(steps);
  for (auto& x : idx) x = static_cast<std::uint32_t>(rng.Below(n));
  t0 = NowNs();
  for (std::size_t i = 0; i < steps; ++i) r[idx[i]].payload[0] += i;
  const double independent = double(NowNs() - t0) / double(steps);
  g_sink = at;
  std::printf("memory,%zu,dependent_ns,%.4g\n", n, dependent);
  std::printf("memory,%zu,independent_ns,%.4g\n", n, independent);
  std::free(r);
}

}  // namespace
}  // namespace tickwheel::bench

int main() {
  using namespace tickwheel::bench;
  const std::int64_t t0 = NowNs();
  std::int64_t sum = 0;
  for (int i = 0; i < 1'000'000; ++i) sum += NowNs();
  g_sink = static_cast<std::uint64_t>(sum);
  std::printf("memory,0,clock_ns,%.4g\n", double(NowNs() - t0) / 1e6);
  for (std::size_t n : {10'000ul, 100'000ul, 1'000'000ul, 10'000'000ul}) Probe(n);
  return 0;
}
