// SPDX-License-Identifier: Apache-2.0
#include "api/stats_handlers.h"

#include <boost/json.hpp>
#include <map>

#include "api/timer_json.h"

#ifndef TICKWHEEL_VERSION
#define TICKWHEEL_VERSION "unknown"
#endif

namespace tickwheel::server {

namespace json = boost::json;

StatsHandlers::StatsHandlers(StoreCalls& calls, ServerClock& clock, const Metrics& metrics,
                             const MetricsSeries& series, StatsSources sources)
    : calls_(calls), store_(calls.store()), clock_(clock), metrics_(metrics), series_(series), sources_(std::move(sources)) {}

namespace {

struct StoreFigures {
  std::vector<std::int64_t> due;
  std::uint64_t bytes = 0;
};

}  // namespace

boost::asio::awaitable<HttpResponse> StatsHandlers::Stats() const {
  const std::int64_t now = clock_.WallMs();
  const StateCounts c = store_.Counts();
  json::object counts;
  for (int i = 0; i < kNumStates; ++i) {
    counts[StateName(static_cast<TimerState>(i))] = c[static_cast<std::size_t>(i)];
  }
  constexpr std::int64_t kMinute = 60'000;
  auto read = StoreRead(calls_, [&store = store_, now]() -> Result<StoreFigures> {
    Result<std::vector<std::int64_t>> due =
        store.CountDue({now + kMinute, now + 60 * kMinute, now + 24 * 60 * kMinute}, kDueCap);
    if (!due.ok()) return due.status();
    Result<std::uint64_t> bytes = store.ApproximateBytes();
    if (!bytes.ok()) return bytes.status();
    return StoreFigures{std::move(*due), *bytes};
  });
  Result<StoreFigures> figures = co_await std::move(read);  // its own statement (GCC 12)
  if (!figures.ok()) co_return ErrorResponse(figures.status());
  const std::vector<std::int64_t>& due = figures->due;
  const bool cluster = !sources_.node_id.empty();
  json::object out{
      {"counts", std::move(counts)},
      {"in_window", sources_.in_window ? sources_.in_window() : 0},
      {"due", json::object{{"minute", due[0]},
                           {"hour", due[1]},
                           {"day", due[2]},
                           {"cap", kDueCap}}},
      {"store", json::object{{"kind", cluster ? "postgresql" : "rocksdb"}, {"bytes", figures->bytes}}},
      {"version", TICKWHEEL_VERSION},
      {"started_ms", sources_.started_ms},
      {"uptime_ms", now - sources_.started_ms},
      {"now_ms", now},
      {"mode", cluster ? "cluster" : "node"}};
  if (cluster) out["node"] = sources_.node_id;
  co_return JsonResponse(200, json::serialize(out));
}

HttpResponse StatsHandlers::Series() const {
  json::array points;
  for (const MetricsSeries::Point& p : series_.Points()) {
    points.push_back(json::object{{"t", p.end_ms},
                                  {"created", p.created_per_s},
                                  {"delivered", p.delivered_per_s},
                                  {"retried", p.retried_per_s},
                                  {"failed", p.failed_per_s},
                                  {"p50", p.lateness_p50_ms},
                                  {"p99", p.lateness_p99_ms},
                                  {"attempts", p.attempts}});
  }
  return JsonResponse(200, json::serialize(json::object{
                               {"bucket_ms", MetricsSeries::kBucketMs}, {"points", std::move(points)}}));
}

boost::asio::awaitable<HttpResponse> StatsHandlers::Cluster() const {
  auto read = StoreRead(calls_, [&store = store_] { return store.Cluster(); });
  Result<std::optional<ClusterState>> state = co_await std::move(read);  // its own statement (GCC 12)
  if (!state.ok()) co_return ErrorResponse(state.status());
  if (!*state) co_return JsonResponse(200, R"({"mode":"node"})");
  const ClusterState& s = **state;
  // Lease owners are "node_id#instance": shown as the node id, with the
  // instance beside it.
  std::map<std::string, std::int64_t> owned;  // owner -> shards whose lease is live
  json::array leases;
  for (const ShardLease& l : s.leases) {
    const bool live = !l.owner.empty() && l.expires_ms > s.now_ms;
    if (live) ++owned[l.owner];
    const std::size_t hash = l.owner.rfind('#');
    leases.push_back(json::object{
        {"shard", l.shard},
        {"owner", l.owner.empty() ? json::value(nullptr) : json::value(l.owner.substr(0, hash))},
        {"owner_instance",
         hash == std::string::npos ? json::value(nullptr) : json::value(l.owner.substr(hash + 1))},
        {"epoch", l.epoch},
        {"expires_ms", l.expires_ms},
        {"live", live}});
  }
  json::array nodes;
  for (const ClusterNode& n : s.nodes) {
    nodes.push_back(json::object{
        {"node_id", n.node_id},
        {"instance", n.instance},
        {"started_ms", n.started_ms},
        {"expires_ms", n.expires_ms},
        {"alive", n.expires_ms > s.now_ms},
        {"shards", owned[n.node_id + "#" + n.instance]},
        {"self", n.node_id == sources_.node_id && n.instance == sources_.instance},
        {"clock_offset_ms",
         n.clock_offset_ms ? json::value(*n.clock_offset_ms) : json::value(nullptr)}});
  }
  json::object out{{"mode", "cluster"},
                   {"node", sources_.node_id},
                   {"instance", sources_.instance},
                   {"now_ms", s.now_ms},
                   {"shards", s.leases.size()},
                   {"fenced_writes", metrics_.fenced_writes.load(std::memory_order_relaxed)},
                   {"nodes", std::move(nodes)},
                   {"leases", std::move(leases)}};
  co_return JsonResponse(200, json::serialize(out));
}

}  // namespace tickwheel::server
