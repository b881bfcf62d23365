// SPDX-License-Identifier: Apache-2.0
// Executor overhead per task, end to end: producers add tasks and Wait until
// all have been executed by a trivial batch function. tickwheel::BulkExecutor
// against a hand-rolled mutex + queue + consumer-thread batcher, at batch
// sizes 1, 100 and 1000, with 1, 2 and 4 producers; plus the cost of
// DelayExecutor::Trigger (coalesced) and LessExecutor::DoOrDiscard.
#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "hand_rolled_batcher.h"
#include "tickwheel/executors/bulk_executor.h"
#include "tickwheel/executors/delay_executor.h"
#include "tickwheel/executors/less_executor.h"

namespace tickwheel::bench {
namespace {

constexpr int kTasksPerIteration = 10'000;  // per producer
constexpr auto kInterval = std::chrono::milliseconds(10);

std::atomic<std::uint64_t> executed{0};

void Execute(std::vector<std::uint64_t> batch) {
  std::uint64_t sum = 0;
  for (std::uint64_t task : batch) sum += task;
  benchmark::DoNotOptimize(sum);
  executed.fetch_add(batch.size(), std::memory_order_relaxed);
}

struct TickwheelBulk {
  explicit TickwheelBulk(std::size_t max_tasks)
      : executor(Execute, {.max_tasks = max_tasks, .interval = kInterval}) {}
  void Add(std::uint64_t task) { executor.Add(task); }
  void Wait() { executor.Wait(); }
  BulkExecutor<std::uint64_t> executor;
};

struct HandRolled {
  explicit HandRolled(std::size_t max_tasks)
      : batcher(Execute, max_tasks, kInterval) {}
  void Add(std::uint64_t task) { batcher.Add(task); }
  void Wait() { batcher.Wait(); }
  HandRolledBatcher<std::uint64_t> batcher;
};

// Shared by the producer threads of one benchmark run; thread 0 creates it
// before the timed loop (which starts with a barrier) and destroys it after.
template <typename Impl>
std::unique_ptr<Impl>& Shared() {
  static std::unique_ptr<Impl> impl;
  return impl;
}

template <typename Impl>
void BM_AddAndWait(benchmark::State& state) {
  if (state.thread_index() == 0) {
    executed = 0;
    Shared<Impl>() =
        std::make_unique<Impl>(static_cast<std::size_t>(state.range(0)));
  }
  for (auto _ : state) {
    Impl& impl = *Shared<Impl>();
    for (int i = 0; i < kTasksPerIteration; ++i) {
      impl.Add(static_cast<std::uint64_t>(i));
    }
    impl.Wait();  // this producer's tasks have all been executed
  }
  state.SetItemsProcessed(state.iterations() * kTasksPerIteration);
  if (state.thread_index() == 0) {
    Shared<Impl>().reset();
    const std::uint64_t expected =
        static_cast<std::uint64_t>(state.iterations()) * kTasksPerIteration *
        state.threads();
    if (executed != expected) state.SkipWithError("tasks lost or repeated");
  }
}

void BatchSizes(benchmark::internal::Benchmark* b) {
  b->ArgName("batch");
  for (int batch : {1, 100, 1000}) b->Arg(batch);
  b->Threads(1)->Threads(2)->Threads(4)->UseRealTime();
}

BENCHMARK(BM_AddAndWait<TickwheelBulk>)
    ->Name("executor/bulk/tickwheel")
    ->Apply(BatchSizes);
BENCHMARK(BM_AddAndWait<HandRolled>)
    ->Name("executor/bulk/hand_rolled")
    ->Apply(BatchSizes);

void BM_DelayTrigger(benchmark::State& state) {
  std::atomic<int> runs{0};
  DelayExecutor executor([&] { ++runs; }, std::chrono::hours(1));
  for (auto _ : state) benchmark::DoNotOptimize(executor.Trigger());
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_DelayTrigger)->Name("executor/delay/trigger");

void BM_LessDoOrDiscard(benchmark::State& state) {
  LessExecutor executor(std::chrono::milliseconds(1));
  int runs = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(executor.DoOrDiscard([&] { ++runs; }));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_LessDoOrDiscard)->Name("executor/less/do_or_discard");

}  // namespace
}  // namespace tickwheel::bench

BENCHMARK_MAIN();
