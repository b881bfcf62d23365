// SPDX-License-Identifier: Apache-2.0
#include "flow/flow_shares.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>

#include "flow/flow_budget.h"
#include "store/pg_connection.h"

namespace tickwheel::server {
namespace {

constexpr char kLockSpace[] = "730425199";  // pg_advisory_xact_lock(int, int)'s first key (an int4)

std::string Ms(std::chrono::milliseconds d) { return std::to_string(d.count()); }

// A share of nothing in each dimension the flow limits.
FlowLimits NoShare(const FlowLimits& limits) {
  FlowLimits none;
  if (limits.rate_limited()) {
    none.rate_per_s = 0;
    none.burst = 0;
  }
  if (limits.capped()) none.max_in_flight = 0;
  none.paused = limits.paused;
  return none;
}

FlowLimits Min(const FlowLimits& a, const FlowLimits& b) {
  FlowLimits m = a;
  m.rate_per_s = std::min(a.rate_per_s, b.rate_per_s);
  m.burst = std::min(a.burst, b.burst);
  m.max_in_flight = std::min(a.max_in_flight, b.max_in_flight);
  return m;
}

std::optional<std::string> Nullable(double v, bool limited) {
  if (!limited) return std::nullopt;
  return std::to_string(v);
}

}  // namespace

FlowShares::FlowShares(FlowSharesOptions options, FlowSharesCallbacks callbacks,
                       FlowRegistry& registry, ServerClock& clock)
    : options_(std::move(options)),
      callbacks_(std::move(callbacks)),
      registry_(registry),
      clock_(clock),
      sleeper_(clock.steady().NewSleeper()) {}

FlowShares::~FlowShares() { Stop(false); }

void FlowShares::Start() { thread_ = std::thread([this] { Loop(); }); }

void FlowShares::Nudge() { sleeper_->Wake(); }

void FlowShares::SetShare(const std::string& flow, std::optional<FlowLimits> share) {
  if (share) {
    held_[flow] = *share;
  } else {
    held_.erase(flow);
  }
  if (callbacks_.share) callbacks_.share(flow, share, valid_until_);
}

void FlowShares::DropAll() {
  if (held_.empty()) return;
  spdlog::warn("flows: shares not renewed in time (the database is out of reach: {}); sending "
               "nothing of the limited flows until they are",
               last_error_);
  std::vector<std::string> flows;
  for (const auto& [flow, share] : held_) flows.push_back(flow);
  for (const std::string& flow : flows) SetShare(flow, std::nullopt);
}

bool FlowShares::Round(PgConnection& c) {
  const TimePoint started = clock_.steady().Now();
  const std::vector<FlowStats> flows = callbacks_.flows ? callbacks_.flows() : std::vector<FlowStats>{};
  struct Mine {
    FlowLimits limits;
    std::int64_t demand = 0;
    std::int64_t in_flight = 0;
  };
  std::map<std::string, Mine> mine;
  for (const FlowStats& f : flows) {
    if (!f.limits.limited()) continue;
    const std::int64_t demand = f.limits.paused ? 0 : f.demand;
    if (demand == 0 && f.in_flight == 0 && !held_.count(f.key)) continue;
    mine[f.key] = {f.limits, demand, f.in_flight};
  }
  for (const auto& [flow, share] : held_) {
    if (!mine.count(flow)) mine[flow] = {registry_.Limits(flow), 0, 0};  // forgotten here: give back
  }
  if (!mine.empty()) {
    std::vector<std::string> keys;
    for (const auto& [flow, m] : mine) keys.push_back(flow);  // sorted: the locks' order
    if (Status s = c.ExecScript("BEGIN"); !s.ok()) {
      last_error_ = s.message();
      return false;
    }
    auto fail = [&](const Status& s) {
      last_error_ = s.message();
      c.Rollback();
      return false;
    };
    for (const std::string& flow : keys) {
      Status s = c.Exec(std::string("SELECT pg_advisory_xact_lock(") + kLockSpace + ", hashtext($1))",
                        {flow})
                     .status();
      if (!s.ok()) return fail(s);
    }
    Result<PgResult> rows = c.Exec(
        "SELECT flow, node_id, coalesce(rate, 0), coalesce(burst, 0), coalesce(max_in_flight, 0), "
        "demand FROM tickwheel_flow_shares WHERE flow = ANY($1::text[]) AND node_id <> $2 "
        "AND expires_at > now()",
        {PgTextArray(keys), options_.node_id});
    if (!rows.ok()) return fail(rows.status());
    std::map<std::string, std::vector<NodeDemand>> demands;
    std::map<std::string, FlowLimits> others;
    for (int i = 0; i < rows->rows(); ++i) {
      const std::string flow(rows->Text(i, 0));
      FlowLimits& o = others.try_emplace(flow, FlowLimits{0, 0, 0, false}).first->second;
      o.rate_per_s += std::stod(std::string(rows->Text(i, 2)));
      o.burst += static_cast<double>(rows->Int(i, 3));
      o.max_in_flight += rows->Int(i, 4);
      demands[flow].push_back({std::string(rows->Text(i, 1)), rows->Int(i, 5)});
    }
    std::vector<std::string> upsert, release;
    std::vector<std::optional<std::string>> rates, bursts, caps;
    std::vector<std::int64_t> upsert_demands;
    std::map<std::string, FlowLimits> after;
    for (const auto& [flow, m] : mine) {
      if (m.demand == 0 && m.in_flight == 0) {  // nothing here: give it back
        release.push_back(flow);
        continue;
      }
      std::vector<NodeDemand> nodes = demands[flow];
      nodes.push_back({options_.node_id, m.demand});
      const FlowLimits target = SplitBudget(m.limits, nodes)[options_.node_id];
      const FlowLimits o = others.count(flow) ? others[flow] : FlowLimits{0, 0, 0, false};
      const ShareStep step = StepShare(m.limits, target, o, m.in_flight);
      const FlowLimits before = held_.count(flow) ? held_[flow] : NoShare(m.limits);
      // Lowered here before the database hears of it; raised only once it did.
      const FlowLimits lower = Min(before, step.use);
      if (lower != before) SetShare(flow, lower);
      after[flow] = step.use;
      upsert.push_back(flow);
      rates.push_back(Nullable(step.record.rate_per_s, m.limits.rate_limited()));
      bursts.push_back(m.limits.rate_limited()
                           ? std::optional<std::string>(std::to_string(
                                 static_cast<std::int64_t>(step.record.burst)))
                           : std::nullopt);
      caps.push_back(m.limits.capped() ? std::optional<std::string>(std::to_string(step.record.max_in_flight))
                                       : std::nullopt);
      upsert_demands.push_back(m.demand);
    }
    for (const std::string& flow : release) {
      if (held_.count(flow)) SetShare(flow, std::nullopt);  // stops using it first
    }
    if (!upsert.empty()) {
      // Arrays with NULLs: built by hand ({1.5,NULL}).
      auto array = [](const std::vector<std::optional<std::string>>& v) {
        std::string out = "{";
        for (std::size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + (v[i] ? *v[i] : "NULL");
        return out + "}";
      };
      Status s = c.Exec(
                      "INSERT INTO tickwheel_flow_shares (flow, node_id, rate, burst, max_in_flight, "
                      "demand, expires_at) SELECT f, $2, r, b, m, d, now() + $7::bigint * "
                      "interval '1 millisecond' FROM unnest($1::text[], $3::float8[], $4::bigint[], "
                      "$5::bigint[], $6::bigint[]) AS v(f, r, b, m, d) "
                      "ON CONFLICT (flow, node_id) DO UPDATE SET rate = excluded.rate, burst = "
                      "excluded.burst, max_in_flight = excluded.max_in_flight, demand = "
                      "excluded.demand, expires_at = excluded.expires_at",
                      {PgTextArray(upsert), options_.node_id, array(rates), array(bursts),
                       array(caps), PgBigintArray(upsert_demands), Ms(options_.lease)})
                     .status();
      if (!s.ok()) return fail(s);
    }
    if (!release.empty()) {
      Status s = c.Exec("DELETE FROM tickwheel_flow_shares WHERE node_id = $1 AND flow = ANY($2::text[])",
                        {options_.node_id, PgTextArray(release)})
                     .status();
      if (!s.ok()) return fail(s);
    }
    if (Status s = c.Commit(); !s.ok()) return fail(s);
    // Renewed: every share held is good for another lease from the round's
    // start (raised ones too, now that the database has them).
    valid_until_ = started + options_.lease;
    for (const auto& [flow, use] : after) SetShare(flow, use);
  }
  valid_until_ = started + options_.lease;
  return PublishHolds(c);
}

bool FlowShares::PublishHolds(PgConnection& c) {
  const std::map<std::string, std::int64_t> holds = registry_.Holds();
  std::vector<std::string> flows;
  std::vector<std::int64_t> until;
  for (const auto& [flow, ms] : holds) {
    auto it = published_holds_.find(flow);
    if (it != published_holds_.end() && it->second >= ms) continue;
    flows.push_back(flow);
    until.push_back(ms);
  }
  if (!flows.empty()) {
    Status s = c.Exec("INSERT INTO tickwheel_flow_holds (flow, until_ms) "
                      "SELECT * FROM unnest($1::text[], $2::bigint[]) "
                      "ON CONFLICT (flow) DO UPDATE SET until_ms = "
                      "greatest(tickwheel_flow_holds.until_ms, excluded.until_ms)",
                      {PgTextArray(flows), PgBigintArray(until)})
                   .status();
    if (!s.ok()) {
      last_error_ = s.message();
      return false;
    }
    for (std::size_t i = 0; i < flows.size(); ++i) published_holds_[flows[i]] = until[i];
  }
  const std::int64_t now_ms = clock_.WallMs();
  Result<PgResult> r = c.Exec("SELECT flow, until_ms FROM tickwheel_flow_holds WHERE until_ms > $1",
                              {std::to_string(now_ms)});
  if (!r.ok()) {
    last_error_ = r.status().message();
    return false;
  }
  std::map<std::string, std::int64_t> all;
  for (int i = 0; i < r->rows(); ++i) all[std::string(r->Text(i, 0))] = r->Int(i, 1);
  registry_.ReplaceHolds(std::move(all), now_ms);
  std::erase_if(published_holds_, [&](const auto& kv) { return kv.second <= now_ms; });
  return true;
}

bool FlowShares::PublishStats(PgConnection& c, const std::vector<FlowStats>& flows) {
  std::vector<std::string> keys;
  std::vector<std::int64_t> sent, delivered, throttled, in_flight;
  std::vector<std::string> lowered;
  for (const FlowStats& f : flows) {
    if (f.sent_last_minute == 0 && f.in_flight == 0 && f.waiting == 0 && !f.deferred) continue;
    keys.push_back(f.key);
    sent.push_back(f.sent_last_minute);
    delivered.push_back(f.delivered_last_minute);
    throttled.push_back(f.throttled_last_minute);
    in_flight.push_back(f.in_flight);
    lowered.push_back(std::to_string(f.lowered_rate));
  }
  std::string lowered_array = "{";
  for (std::size_t i = 0; i < lowered.size(); ++i) lowered_array += (i ? "," : "") + lowered[i];
  lowered_array += "}";
  Status s = c.Exec(
                  "WITH gone AS (DELETE FROM tickwheel_flow_stats WHERE node_id = $1 "
                  "AND NOT (flow = ANY($2::text[]))) "
                  "INSERT INTO tickwheel_flow_stats (node_id, flow, sent, delivered, throttled, "
                  "in_flight, lowered_rate, expires_at) SELECT $1, f, s, d, t, i, l, now() + "
                  "$8::bigint * interval '1 millisecond' FROM unnest($2::text[], $3::bigint[], "
                  "$4::bigint[], $5::bigint[], $6::bigint[], $7::float8[]) AS v(f, s, d, t, i, l) "
                  "ON CONFLICT (node_id, flow) DO UPDATE SET sent = excluded.sent, delivered = "
                  "excluded.delivered, throttled = excluded.throttled, in_flight = "
                  "excluded.in_flight, lowered_rate = excluded.lowered_rate, expires_at = "
                  "excluded.expires_at",
                  {options_.node_id, PgTextArray(keys), PgBigintArray(sent), PgBigintArray(delivered),
                   PgBigintArray(throttled), PgBigintArray(in_flight), lowered_array,
                   Ms(options_.stats_every * 3)})
                 .status();
  if (!s.ok()) last_error_ = s.message();
  return s.ok();
}

Result<std::map<std::string, FlowActivity>> FlowShares::Activity() const {
  internal::MutexLock lock(read_mutex_);
  if (!read_conn_ || !read_conn_->healthy()) {
    read_conn_.reset();
    Result<std::unique_ptr<PgConnection>> c = PgConnection::Connect(options_.postgres);
    if (!c.ok()) return c.status();
    read_conn_ = std::move(*c);
  }
  Result<PgResult> r = read_conn_->Exec(
      "SELECT flow, sum(in_flight), sum(sent), sum(delivered), sum(throttled), "
      "coalesce(min(lowered_rate) FILTER (WHERE lowered_rate > 0), 0) "
      "FROM tickwheel_flow_stats WHERE expires_at > now() GROUP BY flow");
  if (!r.ok()) return r.status();
  std::map<std::string, FlowActivity> out;
  for (int i = 0; i < r->rows(); ++i) {
    FlowActivity& a = out[std::string(r->Text(i, 0))];
    a.in_flight = r->Int(i, 1);
    a.sent_last_minute = r->Int(i, 2);
    a.delivered_last_minute = r->Int(i, 3);
    a.throttled_last_minute = r->Int(i, 4);
    a.lowered_rate = std::stod(std::string(r->Text(i, 5)));
  }
  const std::int64_t now_ms = clock_.WallMs();
  for (const auto& [flow, until] : registry_.Holds()) {
    if (until > now_ms) out[flow].held_until_ms = until;
  }
  return out;
}

void FlowShares::Loop() {
  bool failing = false;
  for (;;) {
    const std::uint64_t token = sleeper_->token();
    {
      internal::MutexLock lock(mutex_);
      if (stop_) return;
    }
    if (!conn_ || !conn_->healthy()) {
      conn_.reset();
      Result<std::unique_ptr<PgConnection>> c = PgConnection::Connect(options_.postgres);
      if (c.ok()) {
        conn_ = std::move(*c);
      } else {
        last_error_ = c.status().message();
      }
    }
    bool ok = conn_ && Round(*conn_);
    const TimePoint now = clock_.steady().Now();
    if (ok && now >= next_stats_) {
      next_stats_ = now + options_.stats_every;
      ok = PublishStats(*conn_, callbacks_.flows ? callbacks_.flows() : std::vector<FlowStats>{});
    }
    if (ok) rounds_.fetch_add(1);
    if (!ok) {
      if (!failing) spdlog::warn("flows: a round of the cluster budget failed: {}", last_error_);
      conn_.reset();
      if (clock_.steady().Now() >= valid_until_) DropAll();
    } else if (failing) {
      spdlog::info("flows: the cluster budget's rounds work again");
    }
    failing = !ok;
    sleeper_->SleepUntil(clock_.steady().Now() + options_.round, token);
  }
}

void FlowShares::Stop(bool release) {
  {
    internal::MutexLock lock(mutex_);
    if (stop_ && !thread_.joinable()) return;
    stop_ = true;
  }
  sleeper_->Wake();
  if (thread_.joinable()) thread_.join();
  if (!release) return;
  if (!conn_ || !conn_->healthy()) {
    Result<std::unique_ptr<PgConnection>> c = PgConnection::Connect(options_.postgres);
    if (!c.ok()) return;  // the leases expire by themselves
    conn_ = std::move(*c);
  }
  (void)conn_->Exec("DELETE FROM tickwheel_flow_shares WHERE node_id = $1", {options_.node_id});
  (void)conn_->Exec("DELETE FROM tickwheel_flow_stats WHERE node_id = $1", {options_.node_id});
}

}  // namespace tickwheel::server
