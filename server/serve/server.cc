// SPDX-License-Identifier: Apache-2.0
#include "serve/server.h"

#include <spdlog/spdlog.h>

#include <boost/asio/ip/address.hpp>
#include <boost/json.hpp>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>

#include "common/redact.h"
#include "delivery/tls_client.h"
#include "delivery/webhook_signer.h"
#include "egress/target_policy.h"
#include "schedule/schedule_record.h"
#include "flow/flow_metrics.h"
#include "ui/console.h"

namespace tickwheel::server {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

// A cluster node's outcomes wait up to this for others to share their
// PostgreSQL transaction (Dispatcher::Options::outcome_linger).
constexpr std::chrono::milliseconds kClusterOutcomeLinger{10};

// --listen host:port: an IP address, or a name resolved to each of its
// addresses ("localhost" -> 127.0.0.1 and ::1); an empty host is 0.0.0.0.
Result<std::vector<tcp::endpoint>> ResolveListen(const std::string& listen) {
  const std::size_t colon = listen.rfind(':');
  if (colon == std::string::npos) {
    return Status::Invalid("bad_flag",
                           "--listen must be host:port, e.g. 127.0.0.1:8080, not \"" + listen + "\"");
  }
  std::string host = listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  int port = -1;
  const std::string_view digits = std::string_view(listen).substr(colon + 1);
  auto [end, perr] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
  if (perr != std::errc() || end != digits.data() + digits.size() || port < 0 || port > 65535) {
    return Status::Invalid("bad_flag", "--listen: bad port in \"" + listen + "\"");
  }
  const auto port16 = static_cast<unsigned short>(port);
  boost::system::error_code ec;
  auto address = asio::ip::make_address(host.empty() ? "0.0.0.0" : host, ec);
  if (!ec) return std::vector<tcp::endpoint>{tcp::endpoint(address, port16)};
  asio::io_context ioc;
  tcp::resolver resolver(ioc);
  auto results = resolver.resolve(host, std::to_string(port), tcp::resolver::passive, ec);
  if (ec || results.empty()) {
    return Status::Invalid("bad_flag", "--listen: cannot resolve \"" + host + "\": " +
                                           (ec ? ec.message() : "no address"));
  }
  std::vector<tcp::endpoint> out;
  for (const auto& r : results) {
    tcp::endpoint e(r.endpoint().address(), port16);
    if (std::find(out.begin(), out.end(), e) == out.end()) out.push_back(e);
  }
  return out;
}

// "http://127.0.0.1:8080, http://[::1]:8080".
std::string ListenUrls(const std::vector<tcp::endpoint>& endpoints, bool tls) {
  std::string out;
  for (const tcp::endpoint& e : endpoints) {
    const std::string host = e.address().is_v6() ? "[" + e.address().to_string() + "]"
                                                 : e.address().to_string();
    out += (out.empty() ? "" : ", ") + std::string(tls ? "https://" : "http://") + host + ":" +
           std::to_string(e.port());
  }
  return out;
}

void AppendGauge(std::string& out, const char* name, const char* help, double v) {
  AppendGaugeMetric(out, name, help, v);
}

void AppendCounter(std::string& out, const char* name, const char* help, std::uint64_t v) {
  AppendCounterMetric(out, name, help, v);
}

// Until `done()` or `deadline`, or `cut_short()`: false if it had to stop
// waiting.
bool WaitFor(const std::function<bool()>& done, std::chrono::steady_clock::time_point deadline,
             const std::function<bool()>& cut_short) {
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline || cut_short()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

// What guards the server and its deliveries, made from the options before
// anything starts, so a bad file or flag stops it at once.
struct Security {
  ApiAccess access;
  std::shared_ptr<asio::ssl::context> api_tls;
  std::shared_ptr<asio::ssl::context> client_tls;
  std::shared_ptr<const WebhookSigner> signer;
  std::shared_ptr<const TargetPolicy> policy;
};

Result<Security> MakeSecurity(const ServeOptions& options, const tcp::endpoint& endpoint) {
  Security out;
  if (!options.auth_token_file.empty()) {
    Result<TokenAuth> auth = TokenAuth::FromFile(options.auth_token_file);
    if (!auth.ok()) return auth.status();
    out.access.auth = std::move(*auth);
  } else if (!endpoint.address().is_loopback() && !options.allow_unauthenticated) {
    return Status::Invalid(
        "bad_flag", "refusing to listen on " + options.listen +
                        " without --auth-token-file: anyone who can reach it could create, read "
                        "and cancel timers (give --auth-token-file, or --allow-unauthenticated "
                        "if something in front of the server authenticates)");
  }
  out.access.metrics_auth = options.metrics_auth;
  // The --listen host, when it is a name, names the server too.
  std::vector<std::string> public_hosts = options.public_hosts;
  const std::string listen_host = RequestGuard::HostOf(options.listen);
  boost::system::error_code not_literal;
  (void)asio::ip::make_address(listen_host, not_literal);
  if (!listen_host.empty() && not_literal) public_hosts.push_back(listen_host);
  Result<RequestGuard> guard =
      RequestGuard::Make({.public_hosts = std::move(public_hosts), .allow_origins = options.allow_origins});
  if (!guard.ok()) return guard.status();
  out.access.guard = std::move(*guard);
  if (options.metrics_auth && !out.access.auth.enabled()) {
    return Status::Invalid("bad_flag", "--metrics-auth needs --auth-token-file (the tokens it checks)");
  }
  if (!options.tls_cert.empty() || !options.tls_key.empty()) {
    Result<std::shared_ptr<asio::ssl::context>> tls =
        MakeTlsServerContext(options.tls_cert, options.tls_key);
    if (!tls.ok()) return tls.status();
    out.api_tls = std::move(*tls);
  }
  Result<std::shared_ptr<asio::ssl::context>> client_tls =
      MakeTlsClientContext({options.ca_file, options.insecure_skip_verify});
  if (!client_tls.ok()) return client_tls.status();
  out.client_tls = std::move(*client_tls);
  if (!options.webhook_secret_file.empty()) {
    Result<WebhookSigner> signer = WebhookSigner::FromFile(options.webhook_secret_file);
    if (!signer.ok()) return signer.status();
    out.signer = std::make_shared<const WebhookSigner>(std::move(*signer));
  }
  Result<TargetPolicy> policy = TargetPolicy::Make(options.target_allow, options.target_deny);
  if (!policy.ok()) return policy.status();
  out.policy = std::make_shared<const TargetPolicy>(std::move(*policy));
  return out;
}

}  // namespace

Server::Server(const ServeOptions& options, ServerClock& clock)
    : options_(options), clock_(clock) {
  for (unsigned i = 0; i < std::max(1u, options.threads); ++i) {
    http_contexts_.push_back(std::make_unique<boost::asio::io_context>(1));
  }
}

Result<std::unique_ptr<Server>> Server::Start(const ServeOptions& options, ServerClock& clock) {
  Result<std::vector<tcp::endpoint>> endpoints = ResolveListen(options.listen);
  if (!endpoints.ok()) return endpoints.status();
  // The access rules look at a non-loopback address if there is one.
  tcp::endpoint endpoint = endpoints->front();
  for (const tcp::endpoint& e : *endpoints) {
    if (!e.address().is_loopback()) endpoint = e;
  }
  Result<Security> security = MakeSecurity(options, endpoint);
  if (!security.ok()) return security.status();
  std::unique_ptr<Server> s(new Server(options, clock));
  Server* raw = s.get();
  // Bind before anything is created: a taken port leaves no store (and no
  // new data directory) behind. Requests wait in the backlog until the
  // HTTP threads start at the end.
  HttpServerOptions http_options = options.http;
  http_options.tls = security->api_tls;
  try {
    std::vector<boost::asio::io_context*> contexts;
    for (const auto& c : s->http_contexts_) contexts.push_back(c.get());
    s->http_ = std::make_unique<HttpServer>(
        std::move(contexts), *endpoints, http_options,
        [raw](const HttpRequest& head) { return raw->api_->Admit(head); });
  } catch (const boost::system::system_error& e) {
    return Status::Unavailable("cannot listen on " + options.listen + ": " + e.code().message() +
                               " (is another server using the port?)");
  }
  Metrics& metrics = s->metrics_;
  const bool cluster = !options.postgres.empty();
  // A node's name: --node-id, else the host name and the listening port
  // (unique per machine; containers that all listen on 0.0.0.0:8080 have
  // host names of their own). Its process is told apart by an instance id.
  const std::string instance = NewInstanceId();
  std::string node_id = options.node_id;
  if (node_id.empty()) {
    char host[256] = {};
    if (gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') std::strcpy(host, "localhost");
    // (Port 0, one the system picks: the instance tells them apart.)
    node_id = std::string(host) + ":" +
              (endpoint.port() != 0 ? std::to_string(endpoint.port()) : instance.substr(0, 8));
  }
  const std::string owner = LeaseOwner(node_id, instance);
  if (cluster) {
    if (options.data_dir_given) {
      spdlog::info("--data-dir {} is ignored: in cluster mode the store is PostgreSQL",
                   options.data_dir);
    }
    LeaseCallbacks callbacks;
    callbacks.acquired = [raw](const std::vector<int>& shards) { raw->scheduler_->AddShards(shards); };
    callbacks.lost = [raw](const std::vector<int>& shards) { raw->scheduler_->RemoveShards(shards); };
    callbacks.releasing = [raw](const std::vector<int>& shards) {
      raw->scheduler_->RemoveShards(shards);
    };
    callbacks.in_flight = [raw](const std::vector<int>& shards) {
      return raw->scheduler_->InFlightOf(shards);
    };
    s->leases_ = std::make_unique<LeaseManager>(
        LeaseOptions{.postgres = options.postgres,
                     .node_id = node_id,
                     .instance = instance,
                     .lease = options.lease,
                     .release_wait = options.webhook.timeout + std::chrono::seconds(2),
                     .max_clock_offset = options.max_clock_offset},
        std::move(callbacks));
  }

  if (!cluster) {
    std::string backup_note;
    if (Status bad = CheckBackupFormat(options.data_dir, &backup_note); !bad.ok()) return bad;
    if (!backup_note.empty()) spdlog::info("{}", backup_note);
  }
  StoreOptions store_options;
  store_options.data_dir = options.data_dir;
  store_options.postgres = options.postgres;
  store_options.shards = options.shards;
  store_options.node_id = owner;
  store_options.fence = s->leases_.get();
  // Past the window, with room for the owner's refill and clocks that differ.
  store_options.resync = [raw] {
    if (raw->scheduler_) raw->scheduler_->ReloadShards();
  };
  store_options.notify_horizon_ms = options.scheduler.window.count() * 3 / 2;
  store_options.lone_writes_on_caller = options.threads >= 2;
  store_options.observer = [&metrics](std::size_t n, bool, std::int64_t ns) {
    metrics.store_writes.fetch_add(1, std::memory_order_relaxed);
    metrics.store_mutations.fetch_add(n, std::memory_order_relaxed);
    metrics.store_write.Observe(static_cast<double>(ns) / 1e6);
  };
  Result<std::unique_ptr<TimerStore>> store = OpenTimerStore(store_options);
  if (!store.ok()) return store.status();
  s->store_ = std::move(*store);
  s->store_calls_ = std::make_unique<StoreCalls>(*s->store_, options.store);
  if (cluster) {
    // One process per node id: a second one with the same id is refused.
    if (Status claimed = s->leases_->ClaimNodeId(); !claimed.ok()) return claimed;
  }
  const StateCounts at_start = s->store_->Counts();
  spdlog::info("store {}: {} pending, {} delivering (in flight at the last stop), "
               "{} delivered, {} failed, {} cancelled",
               cluster ? "PostgreSQL " + RedactUrl(options.postgres) : options.data_dir,
               at_start[0], at_start[1], at_start[2], at_start[3], at_start[4]);

  if (!options.nats.empty()) {
    Result<std::unique_ptr<NatsPublisher>> nats =
        NatsPublisher::Connect(options.nats, options.webhook.timeout, 4, security->signer);
    if (!nats.ok()) return nats.status();
    s->nats_ = std::move(*nats);
    spdlog::info("NATS targets publish to JetStream at {}", RedactUrl(options.nats));
  }
  WebhookClientOptions webhook = options.webhook;
  webhook.tls = security->client_tls;
  webhook.policy = security->policy;
  webhook.signer = security->signer;
  s->webhook_ = std::make_unique<WebhookClient>(webhook);
  if (options.insecure_skip_verify) {
    spdlog::warn("--insecure-skip-verify: the certificates of https:// receivers are NOT checked; "
                 "anyone on the path can read and forge deliveries. For tests only.");
  }
  spdlog::info("webhooks: https:// verified against the system's CAs{}; {}; SSRF guard: {}",
               options.ca_file.empty() ? "" : " and --ca-file " + options.ca_file,
               security->signer ? "signed with " + std::to_string(security->signer->secrets()) +
                                      " secret(s) (Standard Webhooks)"
                                : "not signed (no --webhook-secret-file)",
               security->policy->Describe());
  s->flows_ = std::make_unique<FlowRegistry>(options.flow_defaults);
  SchedulerOptions scheduler_options = options.scheduler;
  // A cluster shares each limited flow's budget (flow/flow_shares.h).
  scheduler_options.shared_flow_budget = cluster;
  s->scheduler_ = std::make_unique<Scheduler>(
      *s->store_, clock, scheduler_options,
      [raw](std::vector<FiredTimer> due) { raw->dispatcher_->OnFired(std::move(due)); },
      s->flows_.get());
  s->dispatcher_ = std::make_unique<Dispatcher>(
      *s->store_, *s->scheduler_, clock, *s->webhook_, s->nats_.get(), metrics,
      Dispatcher::Options{.outcome_linger = cluster ? kClusterOutcomeLinger
                                                    : std::chrono::milliseconds(0)});
  if (options.pause_delivery) {
    s->scheduler_->Pause(true);
    spdlog::warn("--pause-delivery: no timer is fired until POST /v1/admin/delivery:resume "
                 "(tickwheel delivery resume)");
  }
  s->store_->SetDueListener(
      [raw](const std::string& id, std::optional<std::int64_t> due, const std::string& flow) {
        raw->scheduler_->OnDueChange(id, due, flow);
      });
  if (cluster) {
    FlowSharesCallbacks share_callbacks;
    share_callbacks.flows = [raw] { return raw->scheduler_->Flows(); };
    share_callbacks.share = [raw](const std::string& flow, std::optional<FlowLimits> share,
                                  TimePoint until) {
      raw->scheduler_->SetFlowShare(flow, share, until);
    };
    s->flow_shares_ = std::make_unique<FlowShares>(
        FlowSharesOptions{.postgres = options.postgres, .node_id = node_id, .lease = options.lease},
        std::move(share_callbacks), *s->flows_, clock);
  }
  s->flow_service_ = std::make_unique<FlowService>(
      *s->store_, *s->flows_, clock,
      [raw]() -> Result<std::map<std::string, FlowActivity>> {
        if (raw->flow_shares_) return raw->flow_shares_->Activity();
        return raw->LocalFlowActivity();
      },
      [raw] {
        raw->scheduler_->Nudge();
        if (raw->flow_shares_) raw->flow_shares_->Nudge();
      });
  if (Status flows = s->flow_service_->Refresh(); !flows.ok()) {
    return Status::Unavailable("cannot read the flows' settings: " + flows.message());
  }
  s->flow_handlers_ = std::make_unique<FlowHandlers>(*s->store_calls_, *s->flow_service_);

  ApiLimits limits = options.limits;
  limits.nats_enabled = s->nats_ != nullptr;
  limits.https_enabled = true;
  TargetCheck targets;
  targets.policy = security->policy.get();
  targets.resolver = &s->webhook_->resolver();
  s->policy_ = security->policy;
  s->handlers_ = std::make_unique<TimerHandlers>(*s->store_calls_, clock, metrics, limits, targets);
  s->schedules_ = std::make_unique<ScheduleHandlers>(*s->store_calls_, clock, metrics, limits, targets);
  s->dead_letters_ = std::make_unique<DeadLetterHandlers>(*s->store_calls_, clock);
  s->series_ = std::make_unique<MetricsSeries>(metrics, clock.WallMs());
  s->series_sampler_ = std::make_unique<internal::PeriodicThread>(
      clock.steady(), std::chrono::milliseconds(MetricsSeries::kBucketMs),
      [raw, &clock] { raw->series_->Sample(clock.WallMs()); });
  StatsSources sources;
  sources.node_id = cluster ? node_id : "";
  sources.instance = cluster ? instance : "";
  sources.started_ms = clock.WallMs();
  sources.in_window = [raw] { return raw->scheduler_->loaded(); };
  s->stats_ = std::make_unique<StatsHandlers>(*s->store_calls_, clock, metrics, *s->series_,
                                              std::move(sources));
  s->exports_ = std::make_unique<ExportSessions>(*s->store_, clock);
  s->backups_ = std::make_unique<BackupTaker>(*s->store_);
  s->admin_pool_ = std::make_unique<asio::thread_pool>(2);
  AdminControls controls;
  controls.pause_delivery = [raw](bool paused) {
    raw->scheduler_->Pause(paused);
    spdlog::info("delivery {}", paused ? "paused (POST /v1/admin/delivery:resume resumes it)"
                                       : "resumed");
  };
  controls.delivery_paused = [raw] { return raw->scheduler_->paused(); };
  // The scheduler's count: a timer is in flight from the moment it fires
  // (before the dispatcher sees it) until its outcome is written.
  controls.in_flight = [raw] { return static_cast<std::int64_t>(raw->scheduler_->in_flight()); };
  controls.writes_paused = &s->writes_paused_;
  controls.pause_wait = options.drain_timeout;
  s->admin_ = std::make_unique<AdminHandlers>(
      AdminParts{*s->store_calls_, clock, *s->flow_service_, *s->exports_, *s->backups_, *s->admin_pool_,
                 cluster ? "postgres" : "embedded"},
      limits, std::move(controls));
  const bool tokens = security->access.auth.enabled();
  const std::size_t token_count = security->access.auth.size();
  Api::StaticFiles console;
  if (options.ui) {
    console = [](const HttpRequest& head) -> std::optional<HttpResponse> {
      const std::string_view target = head.target();
      if (!Console::Handles(target.substr(0, target.find('?')))) return std::nullopt;
      return Console::Serve(head);
    };
  }
  s->api_ = std::make_unique<Api>(
      Api::Handlers{*s->handlers_, *s->dead_letters_, *s->stats_, *s->schedules_,
                    *s->flow_handlers_, *s->admin_},
      metrics,
      [raw](std::string& out) { raw->AppendGauges(out); }, [raw] { return raw->HealthDetail(); },
      std::move(security->access), std::move(console), &s->writes_paused_);
  if (tokens) {
    spdlog::info("access: {} token(s) from --auth-token-file; /metrics {}", token_count,
                 options.metrics_auth ? "needs a token" : "open");
  } else {
    spdlog::warn("access: no --auth-token-file: anyone who can reach {} may create, read and "
                 "cancel timers", options.listen);
  }

  if (options.retention.count() > 0) {
    s->retention_ = std::make_unique<Retention>(*s->store_, clock, options.retention);
    s->retention_->Start();
  }
  if (cluster) {
    s->StartCluster(node_id, owner);
  } else {
    std::vector<int> shards(static_cast<std::size_t>(s->store_->shard_count()));
    std::iota(shards.begin(), shards.end(), 0);
    s->scheduler_->AddShards(shards);
  }
  s->scheduler_->Start();
  s->flow_refresher_ = std::make_unique<internal::PeriodicThread>(
      clock.steady(), std::chrono::seconds(1), [raw] { raw->RefreshFlows(); });
  s->http_->Start();
  for (const auto& context : s->http_contexts_) {
    s->http_threads_.emplace_back([c = context.get()] {
      // Runs until Drain stops it, even while it has no connection yet.
      auto work = boost::asio::make_work_guard(*c);
      c->run();
    });
  }
  s->started_ = true;
  const std::string urls = ListenUrls(s->http_->endpoints(), http_options.tls != nullptr);
  spdlog::info("tickwheel serve: listening on {}, {}", urls,
               cluster ? "cluster node " + node_id + " (instance " + instance + ") over " +
                             std::to_string(s->store_->shard_count()) + " shards"
                       : "data in " + options.data_dir);
  if (options.ui) {
    spdlog::info("web console at {}/ui/ ({})", urls.substr(0, urls.find(',')),
                 tokens ? "it asks for a token; a read token gets a read-only console"
                        : "no tokens: whoever reaches it may change timers");
  }
  return s;
}

void Server::StartCluster(const std::string& node_id, const std::string& owner) {
  node_id_ = node_id;
  NotificationCallbacks callbacks;
  callbacks.due = [this](const std::string& id, std::optional<std::int64_t> due,
                         const std::string& flow) { scheduler_->OnDueChange(id, due, flow); };
  callbacks.resync = [this] { scheduler_->ReloadShards(); };
  callbacks.leases = [this] { leases_->Nudge(); };
  callbacks.flows = [this](const std::string&) {
    if (Status s = flow_service_->Refresh(); s.ok()) scheduler_->Nudge();
  };
  notifications_ = std::make_unique<NotificationListener>(options_.postgres, owner,
                                                          std::move(callbacks));
  notifications_->Start();
  leases_->Start(store_->shard_count());
  flow_shares_->Start();
}

std::string Server::HealthDetail() const {
  std::string out = store_calls_->available() ? R"(,"store":"ok")" : R"(,"store":"unavailable")";
  if (scheduler_->paused()) out += ",\"delivery\":\"paused\"";
  if (writes_paused_.load()) out += ",\"writes\":\"paused\"";
  if (!leases_) return out;
  return out + ",\"node\":" + boost::json::serialize(boost::json::string(node_id_)) + ",\"shards_owned\":" +
         std::to_string(leases_->owned().size()) +
         ",\"leases_held\":" + (leases_->holds_leases() ? "true" : "false");
}

void Server::RefreshFlows() {
  if (Status s = flow_service_->Refresh(); !s.ok()) {
    spdlog::warn("flows: could not read their settings ({}); the last ones read stay in force",
                 s.message());
  }
  if (flow_refreshes_++ % 5 != 0) return;
  std::map<std::string, std::int64_t> backlog;
  const std::vector<int> shards = scheduler_->shards();
  const std::int64_t now_ms = clock_.WallMs();
  for (const FlowStats& f : scheduler_->Flows()) {
    if (!f.deferred) continue;
    // At most 10,000 counted (the embedded store walks its due index for it).
    Result<TimerStore::FlowCount> n = store_->CountFlowDue(f.key, now_ms + 1, 10'000, &shards);
    if (n.ok()) backlog[f.key] = n->count;
  }
  internal::MutexLock lock(flow_backlog_mutex_);
  flow_backlog_ = std::move(backlog);
}

std::map<std::string, FlowActivity> Server::LocalFlowActivity() const {
  std::map<std::string, FlowActivity> out;
  for (const FlowStats& f : scheduler_->Flows()) {
    if (f.in_flight == 0 && f.sent_last_minute == 0 && f.waiting == 0 && !f.deferred &&
        f.held_until_ms == 0 && f.lowered_rate == 0) {
      continue;
    }
    FlowActivity& a = out[f.key];
    a.in_flight = f.in_flight;
    a.sent_last_minute = f.sent_last_minute;
    a.delivered_last_minute = f.delivered_last_minute;
    a.throttled_last_minute = f.throttled_last_minute;
    a.lowered_rate = f.lowered_rate;
    a.held_until_ms = f.held_until_ms;
  }
  return out;
}

Server::~Server() {
  Drain([] { return true; });
}

void Server::AppendGauges(std::string& out) const {
  const StateCounts c = store_->Counts();
  std::vector<std::pair<std::string_view, double>> by_state;
  for (int i = 0; i < kNumStates; ++i) {
    by_state.emplace_back(StateName(static_cast<TimerState>(i)), static_cast<double>(c[static_cast<std::size_t>(i)]));
  }
  AppendLabeledGauge(out, "tickwheel_timers",
                     "Timers in the store by state (pending includes retries in backoff; "
                     "failed are dead letters).",
                     "state", by_state);
  AppendGauge(out, "tickwheel_timers_in_window", "Timers loaded in memory (in the wheel or in flight).", static_cast<double>(scheduler_->loaded()));
  AppendGauge(out, "tickwheel_window_end_timestamp_seconds", "End of the in-memory window (Unix time in seconds).", static_cast<double>(scheduler_->window_end_ms()) / 1000.0);
  AppendGauge(out, "tickwheel_http_connections", "API connections open.", static_cast<double>(http_->open_connections()));
  AppendGauge(out, "tickwheel_http_request_memory_bytes", "Request memory reserved by requests being served.", static_cast<double>(http_->reserved_memory()));
  AppendGauge(out, "tickwheel_webhook_connections", "Webhook connections open.", static_cast<double>(webhook_->connections()));
  AppendCounter(out, "tickwheel_webhook_connects_total", "Webhook connections made (plain and TLS).", webhook_->connects());
  AppendCounter(out, "tickwheel_webhook_tls_handshakes_total", "TLS handshakes with https:// receivers completed.", webhook_->tls_handshakes());
  AppendCounter(out, "tickwheel_webhook_tls_resumed_total", "Of those, handshakes that resumed a session.", webhook_->tls_resumed());
  AppendCounter(out, "tickwheel_webhook_connection_waits_total", "Attempts that waited for a connection slot (--max-webhook-connections).", webhook_->waited_for_connection());
  AppendCounter(out, "tickwheel_dns_lookup_timeouts_total", "Name lookups not answered within the time an attempt or a create waits.", webhook_->resolver().timeouts());
  AppendCounter(out, "tickwheel_dns_lookups_refused_total", "Name lookups refused: the resolver's queue or cache was full.", webhook_->resolver().refused());
  AppendCounter(out, "tickwheel_dns_stale_answers_total", "Expired answers used while the name was looked up again.", webhook_->resolver().stale_answers());
  AppendGauge(out, "tickwheel_dns_cached_names", "Names in the resolver's cache.", static_cast<double>(webhook_->resolver().cached_names()));
  AppendCounter(out, "tickwheel_store_calls_late_total", "API store calls answered 503 at the deadline (--store-timeout).", store_calls_->late());
  AppendCounter(out, "tickwheel_store_calls_refused_total", "API store calls refused: too many waiting.", store_calls_->refused());
  AppendGauge(out, "tickwheel_store_available", "1 if the store answers the API in time (as /healthz says).", store_calls_->available() ? 1 : 0);
  AppendCounter(out, "tickwheel_http_refused_per_client_total", "Connections closed at accept: their client held --max-connections-per-client.", http_->refused_per_client());
  if (leases_) {
    AppendGauge(out, "tickwheel_cluster_shards_owned", "Shards whose lease this node holds.", static_cast<double>(leases_->owned().size()));
    AppendGauge(out, "tickwheel_cluster_leases_held", "1 if the node holds its leases, renewed in time.", leases_->holds_leases() ? 1 : 0);
    AppendCounter(out, "tickwheel_cluster_lease_renewals_total", "Lease renewal rounds that reached the database.", leases_->renewals());
    AppendCounter(out, "tickwheel_cluster_leases_lost_total", "Leases lost (taken over, or expired unrenewed).", leases_->lost_leases());
    AppendCounter(out, "tickwheel_cluster_leases_acquired_total", "Leases taken.", leases_->acquired_leases());
    AppendCounter(out, "tickwheel_cluster_leases_released_total", "Leases handed over.", leases_->released_leases());
    AppendCounter(out, "tickwheel_cluster_notices_total", "Announcements of other nodes' changes received.", notifications_->notices());
    const std::optional<std::int64_t> offset = leases_->clock_offset_ms();
    AppendGauge(out, "tickwheel_cluster_clock_offset_seconds", "This node's wall clock minus the database's, at the last heartbeat (NaN before the first).", offset ? static_cast<double>(*offset) / 1000.0 : std::nan(""));
    AppendGauge(out, "tickwheel_cluster_clock_ok", "0 while the clock offset is past --max-clock-offset (the node owns no shard).", leases_->clock_ok() ? 1 : 0);
    AppendGauge(out, "tickwheel_cluster_identity_ok", "0 while another process holds this node id (the node owns no shard).", leases_->identity_ok() ? 1 : 0);
  }
  const ScheduleCounts schedules = store_->CountSchedules();
  std::vector<std::pair<std::string_view, double>> schedules_by_state;
  for (int i = 0; i < kScheduleStates; ++i) {
    schedules_by_state.emplace_back(StateName(static_cast<ScheduleState>(i)),
                                    static_cast<double>(schedules[static_cast<std::size_t>(i)]));
  }
  AppendLabeledGauge(out, "tickwheel_schedules", "Schedules in the store by state.", "state",
                     schedules_by_state);
  {
    std::map<std::string, std::int64_t> backlog;
    {
      internal::MutexLock lock(flow_backlog_mutex_);
      backlog = flow_backlog_;
    }
    AppendFlowMetrics(out, scheduler_->Flows(), scheduler_->RetiredFlows(), flows_->All(), backlog);
  }
  AppendCounter(out, "tickwheel_timers_swept_total", "Overdue timers found not loaded by the sweep (a missed change; should stay 0).", scheduler_->swept());
  AppendCounter(out, "tickwheel_http_overloaded_total", "Requests and connections refused (503 or closed) over a limit.", http_->overloaded());
  store_->AppendMetrics(out);
}

void Server::Drain(const std::function<bool()>& cut_short) {
  if (drained_) return;
  drained_ = true;
  if (!started_) return;  // Start failed: the members' destructors stop what started
  // Probes get 503 "draining" and new writes are refused, on new
  // connections too; each answer closes its connection.
  api_->SetDraining();
  http_->CloseAfterEachAnswer();
  if (leases_) leases_->StopAcquiring();
  // No new attempts; wait for those in flight to be written back.
  flow_refresher_.reset();
  scheduler_->Stop();
  const auto deadline = std::chrono::steady_clock::now() + options_.drain_timeout;
  if (!WaitFor([&] { return dispatcher_->in_flight() == 0; }, deadline, cut_short)) {
    spdlog::warn("drain {}: {} attempts in flight stay 'delivering' and fire again at the next "
                 "start",
                 cut_short() ? "cut short" : "timed out", dispatcher_->in_flight());
  }
  // What is still being sent is given up without an outcome (kAborted).
  webhook_->Stop();
  if (nats_) nats_->Stop();
  dispatcher_->Stop();
  // Cluster: give the flows' shares back and hand the shards over, so other
  // nodes take them at once.
  if (flow_shares_) flow_shares_->Stop(/*release=*/true);
  if (notifications_) notifications_->Stop();
  if (leases_) leases_->Stop(/*hand_over=*/true);
  // Let open connections finish the request they are in, briefly.
  http_->StopAccepting();
  WaitFor([&] { return http_->open_connections() == 0; },
          std::chrono::steady_clock::now() + std::chrono::seconds(2), cut_short);
  for (const auto& context : http_contexts_) context->stop();
  for (auto& t : http_threads_) t.join();
  admin_pool_->join();  // backups and export pages in progress finish
  exports_->Clear();    // their snapshots go before the store closes
  series_sampler_.reset();
  if (retention_) retention_->Stop();
  store_calls_->Stop();
  store_->Close();
}

}  // namespace tickwheel::server
