#include "serve.h"

#include <spdlog/spdlog.h>

#include <boost/asio.hpp>
#include <condition_variable>
#include <sys/resource.h>

#include <csignal>
#include <thread>
#include <vector>

#include "api/api.h"
#include "delivery/dispatcher.h"
#include "metrics.h"
#include "store/retention.h"
#include "store/timer_store.h"
#include "wall_clock.h"

namespace tickwheel::server {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

std::optional<tcp::endpoint> ParseListen(const std::string& listen, std::string* error) {
  const std::size_t colon = listen.rfind(':');
  if (colon == std::string::npos) {
    *error = "--listen must be host:port, e.g. 127.0.0.1:8080, not \"" + listen + "\"";
    return std::nullopt;
  }
  boost::system::error_code ec;
  std::string host = listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  auto address = asio::ip::make_address(host.empty() ? "0.0.0.0" : host, ec);
  if (ec) {
    *error = "--listen: \"" + host + "\" is not an IP address";
    return std::nullopt;
  }
  int port = -1;
  try {
    port = std::stoi(listen.substr(colon + 1));
  } catch (...) {
  }
  if (port < 0 || port > 65535) {
    *error = "--listen: bad port in \"" + listen + "\"";
    return std::nullopt;
  }
  return tcp::endpoint(address, static_cast<unsigned short>(port));
}

void AppendGauge(std::string& out, const char* name, const char* help, double v) {
  char line[320];
  std::snprintf(line, sizeof line, "# HELP %s %s\n# TYPE %s gauge\n%s %.17g\n", name,
                help, name, name, v);
  out += line;
}

}  // namespace

namespace {
// Many client and webhook connections: raise the open-files limit to the
// hard limit.
void RaiseFileLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}
}  // namespace

int RunServe(const ServeOptions& options) {
  spdlog::set_level(spdlog::level::from_str(options.log_level));
  RaiseFileLimit();
  if (!options.postgres.empty()) {
    spdlog::error("--postgres: the PostgreSQL store (cluster mode) is not supported yet; "
                  "run without it to use the embedded store in --data-dir");
    return 1;
  }
  std::string error;
  auto endpoint = ParseListen(options.listen, &error);
  if (!endpoint) {
    spdlog::error("{}", error);
    return 1;
  }
  std::unique_ptr<TimerStore> store = TimerStore::Open(options.data_dir, &error);
  if (!store) {
    spdlog::error("{}", error);
    return 1;
  }
  Metrics metrics;
  store->SetWriteObserver([&metrics](std::size_t n, bool, std::int64_t ns) {
    metrics.store_writes.fetch_add(1, std::memory_order_relaxed);
    metrics.store_mutations.fetch_add(n, std::memory_order_relaxed);
    metrics.store_write.Observe(static_cast<double>(ns) / 1e6);
  });
  const StateCounts at_start = store->Counts();
  spdlog::info("store {}: {} pending, {} delivering (in flight at the last stop), "
               "{} delivered, {} failed, {} cancelled",
               options.data_dir, at_start[0], at_start[1], at_start[2], at_start[3],
               at_start[4]);

  std::unique_ptr<NatsPublisher> nats;
  if (!options.nats.empty()) {
    nats = NatsPublisher::Connect(options.nats, options.webhook.timeout, 4, &error);
    if (!nats) {
      spdlog::error("{}", error);
      return 1;
    }
    spdlog::info("NATS targets publish to JetStream at {}", options.nats);
  }
  ApiLimits limits = options.limits;
  limits.nats_enabled = nats != nullptr;
  WebhookClient webhook(options.webhook);
  Dispatcher* dispatcher_ptr = nullptr;
  Scheduler scheduler(*store, options.scheduler, [&dispatcher_ptr](std::vector<DueEntry> due) {
    dispatcher_ptr->OnFired(std::move(due));
  });
  Dispatcher dispatcher(*store, scheduler, webhook, nats.get(), metrics);
  dispatcher_ptr = &dispatcher;

  Api api(*store, scheduler, metrics, limits, [&](std::string& out) {
    const StateCounts c = store->Counts();
    AppendGauge(out, "tickwheel_timers_pending", "Timers waiting to fire (incl. retries in backoff).", static_cast<double>(c[0]));
    AppendGauge(out, "tickwheel_timers_delivering", "Timers with an attempt in flight.", static_cast<double>(c[1]));
    AppendGauge(out, "tickwheel_timers_delivered", "Timers delivered (kept in the store).", static_cast<double>(c[2]));
    AppendGauge(out, "tickwheel_timers_dead_letters", "Timers that failed every attempt.", static_cast<double>(c[3]));
    AppendGauge(out, "tickwheel_timers_cancelled", "Timers cancelled (kept in the store).", static_cast<double>(c[4]));
    AppendGauge(out, "tickwheel_timers_in_window", "Timers loaded in memory (in the wheel or in flight).", static_cast<double>(scheduler.loaded()));
    AppendGauge(out, "tickwheel_store_wal_syncs", "WAL fsyncs since start (creates share them).", static_cast<double>(store->wal_syncs()));
    AppendGauge(out, "tickwheel_window_end_seconds", "End of the in-memory window (Unix time).", static_cast<double>(scheduler.window_end_ms()) / 1000.0);
  });

  asio::io_context ioc(static_cast<int>(options.threads));
  std::unique_ptr<HttpServer> http;
  try {
    http = std::make_unique<HttpServer>(
        ioc, *endpoint, options.http,
        [&api](HttpRequest& req) { return api.Handle(req); });
  } catch (const boost::system::system_error& e) {
    spdlog::error("cannot listen on {}: {} (is another server using the port?)",
                  options.listen, e.code().message());
    return 1;
  }
  std::unique_ptr<Retention> retention;
  if (options.retention.count() > 0) {
    retention = std::make_unique<Retention>(*store, options.retention);
    retention->Start();
  }
  scheduler.Start();
  http->Start();
  spdlog::info("tickwheel serve: listening on {}:{}, data in {}",
               endpoint->address().to_string(), http->port(), options.data_dir);

  asio::signal_set signals(ioc, SIGTERM, SIGINT);
  std::mutex mutex;
  std::condition_variable cv;
  bool stop_requested = false;
  signals.async_wait([&](const boost::system::error_code& ec, int sig) {
    if (ec) return;
    spdlog::info("signal {}: draining", sig);
    api.SetDraining();
    http->StopAccepting();
    {
      std::lock_guard lock(mutex);
      stop_requested = true;
    }
    cv.notify_all();
  });
  std::vector<std::thread> threads;
  for (unsigned i = 0; i < std::max(1u, options.threads); ++i) {
    threads.emplace_back([&ioc] { ioc.run(); });
  }
  {
    std::unique_lock lock(mutex);
    cv.wait(lock, [&] { return stop_requested; });
  }
  // Drain: no new fires; wait for the attempts in flight to be written back.
  scheduler.Stop();
  const auto deadline = std::chrono::steady_clock::now() + options.drain_timeout;
  while (scheduler.in_flight() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (scheduler.in_flight() > 0) {
    spdlog::warn("drain timeout: {} attempts still in flight stay 'delivering' and are "
                 "fired again at the next start", scheduler.in_flight());
  }
  // Let open connections finish the request they are in, briefly.
  const auto http_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (http->open_connections() > 0 && std::chrono::steady_clock::now() < http_deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ioc.stop();
  for (auto& t : threads) t.join();
  webhook.Stop();
  if (nats) nats->Stop();
  if (retention) retention->Stop();
  store->Close();
  spdlog::info("stopped cleanly");
  return 0;
}

}  // namespace tickwheel::server
