// SPDX-License-Identifier: Apache-2.0
// Recurrence::NextAfter (server/schedule/recurrence.h) on typical and hard
// specs, each asked in a chain (every answer is the next call's start, as
// the schedule service asks once per fired occurrence), from 2026 on; the
// chain starts over at 2026 when it passes 2100 or finds nothing.
//
// Beside it, for the specs with a time every day or so, a naive search as
// simple cron libraries do it: minute by minute (second by second with six
// fields) from the start, each minute's zone reading checked field by
// field (CronSearch::Matches; DST policies ignored, which only flatters it).
// croniter's figures come from report.py (Python, same specs and zones).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>

#include "schedule/cron_expression.h"
#include "schedule/cron_search.h"
#include "schedule/recurrence.h"
#include "schedule/zone.h"

namespace tickwheel::bench {
namespace {

using server::DstOverlap;
using server::Recurrence;
using server::RecurrenceSpec;

constexpr std::int64_t kStartMs = 1'767'225'600'000;  // 2026-01-01T00:00:00Z
constexpr std::int64_t kRestartMs = 4'102'444'800'000;  // 2100-01-01T00:00:00Z

struct Case {
  const char* label;  // the benchmark's name after next_after/ or walk/
  const char* cron;   // "" for every_ms
  const char* zone;
  DstOverlap overlap;
  bool walk;  // also run the naive walk (specs with frequent times)
};

// report.py parses the labels; keep them in step with its SPECS.
const Case kCases[] = {
    {"every_ms_60000", "", "", DstOverlap::kFirst, false},
    {"every_5_minutes_utc", "*/5 * * * *", "UTC", DstOverlap::kFirst, true},
    {"weekdays_9_berlin", "0 9 * * MON-FRI", "Europe/Berlin", DstOverlap::kFirst, true},
    {"daily_0230_berlin_both", "30 2 * * *", "Europe/Berlin", DstOverlap::kBoth, true},
    {"every_10_seconds_new_york", "*/10 * * * * *", "America/New_York", DstOverlap::kFirst,
     true},
    {"hourly_lord_howe", "0 * * * *", "Australia/Lord_Howe", DstOverlap::kFirst, true},
    {"last_day_of_month_tokyo", "0 0 L * *", "Asia/Tokyo", DstOverlap::kFirst, true},
    {"friday_or_31st_berlin", "0 0 31 * FRI", "Europe/Berlin", DstOverlap::kFirst, true},
    {"leap_day_utc", "0 0 29 2 *", "UTC", DstOverlap::kFirst, false},
    {"fifth_monday_of_february_utc", "0 0 * 2 MON#5", "UTC", DstOverlap::kFirst, false},
    {"impossible_30_february", "0 0 30 2 *", "UTC", DstOverlap::kFirst, false},
};

Recurrence Compile(const Case& c) {
  RecurrenceSpec spec;
  if (c.cron[0] == '\0') {
    spec.every_ms = 60'000;
  } else {
    spec.cron = c.cron;
    spec.time_zone = c.zone;
    spec.dst_overlap = c.overlap;
  }
  return *Recurrence::Compile(spec);
}

void BM_NextAfter(benchmark::State& state, const Case& c) {
  Recurrence r = Compile(c);
  std::int64_t t = kStartMs;
  for (auto _ : state) {
    std::optional<std::int64_t> next = r.NextAfter(t);
    t = (next && *next < kRestartMs) ? *next : kStartMs;
    benchmark::DoNotOptimize(t);
  }
  state.SetItemsProcessed(state.iterations());
}

// The naive peer: step by step from the start until a reading matches.
void BM_Walk(benchmark::State& state, const Case& c) {
  server::recurrence_internal::CronExpression e = *server::recurrence_internal::ParseCronExpression(c.cron);
  server::recurrence_internal::CronSearch search(e);
  std::shared_ptr<const server::recurrence_internal::Zone> zone = *server::recurrence_internal::Zone::Find(c.zone);
  const std::int64_t step = e.has_seconds ? 1 : 60;
  std::int64_t t = kStartMs / 1000;
  for (auto _ : state) {
    std::int64_t u = (t / step + 1) * step;
    server::recurrence_internal::Zone::Period period = zone->At(u);
    while (!search.Matches(u + period.utc_offset_s)) {
      u += step;
      if (u >= period.end) period = zone->At(u);
    }
    t = u < kRestartMs / 1000 ? u : kStartMs / 1000;
    benchmark::DoNotOptimize(t);
  }
  state.SetItemsProcessed(state.iterations());
}

const bool kRegistered = [] {
  for (const Case& c : kCases) {
    benchmark::RegisterBenchmark((std::string("next_after/") + c.label).c_str(), BM_NextAfter, c);
    if (c.walk) {
      benchmark::RegisterBenchmark((std::string("walk/") + c.label).c_str(), BM_Walk, c);
    }
  }
  return true;
}();

}  // namespace
}  // namespace tickwheel::bench

BENCHMARK_MAIN();
