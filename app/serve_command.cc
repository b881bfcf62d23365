// SPDX-License-Identifier: Apache-2.0
// `tickwheel serve`: the durable timer server (server/serve/).
#include <CLI/CLI.hpp>
#include <map>
#include <memory>

#include "client.h"
#include "commands.h"
#include "duration_flag.h"
#include "serve/serve.h"

namespace tickwheel::app {

namespace {

std::chrono::milliseconds Ms(const std::string& text) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(*ParseDuration(text));
}

}  // namespace

void RegisterServeCommand(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<server::ServeOptions>();
  auto flags = std::make_shared<std::map<std::string, std::string>>(
      std::map<std::string, std::string>{{"window", "60s"},
                                         {"backoff", "1s"},
                                         {"delivery-timeout", "10s"},
                                         {"horizon", "3650d"},
                                         {"drain-timeout", "30s"},
                                         {"retention", "7d"},
                                         {"lease", "10s"},
                                         {"store-timeout", "10s"},
                                         {"header-timeout", "10s"},
                                         {"body-timeout", "30s"},
                                         {"max-clock-offset", "1s"}});
  CLI::App* cmd = app.add_subcommand(
      "serve", "Run the durable timer server (HTTP API; embedded RocksDB store, or a "
               "PostgreSQL cluster)");
  cmd->add_option("--listen", options->listen, "host:port to listen on")
      ->capture_default_str();
  auto* data_dir = cmd->add_option("--data-dir", options->data_dir,
                                   "where the embedded store keeps its files")
                       ->capture_default_str();
  cmd->add_option("--postgres", options->postgres,
                  "cluster mode: a PostgreSQL URL (postgresql://user@host:5432/db) shared by "
                  "the nodes, instead of --data-dir");
  cmd->add_option("--node-id", options->node_id,
                  "cluster mode: this node's name, unique in the cluster (default: the host "
                  "name and the --listen port)");
  cmd->add_option("--max-clock-offset", (*flags)["max-clock-offset"],
                  "cluster mode: past this offset from the database's clock the node owns no "
                  "shard (0s: not checked)")
      ->capture_default_str()->check(DurationCheck());
  cmd->add_option("--shards", options->shards,
                  "cluster mode: shards, fixed when the schema is created (default 256)")
      ->check(CLI::Range(1, 65536));
  cmd->add_option("--lease", (*flags)["lease"], "cluster mode: how long a shard lease lasts")
      ->capture_default_str()->check(DurationCheck());
  cmd->add_option("--nats", options->nats,
                  "NATS URL (nats://host:4222) for {\"nats\": subject} targets (JetStream)");
  cmd->add_option("--threads", options->threads, "HTTP server threads")
      ->capture_default_str()->check(CLI::Range(1, 64));
  cmd->add_option("--window", (*flags)["window"],
                  "look-ahead: timers due within it are kept in memory")
      ->capture_default_str()->check(DurationCheck());
  cmd->add_option("--max-window-timers", options->scheduler.max_window_timers,
                  "at most this many timers in memory")
      ->capture_default_str()->check(CLI::Range(1000, 100'000'000));
  cmd->add_option("--max-attempts", options->limits.default_max_attempts,
                  "default delivery attempts per timer (before it is a dead letter)")
      ->capture_default_str()->check(CLI::Range(1, 100));
  cmd->add_option("--backoff", (*flags)["backoff"],
                  "default first retry delay (doubles per attempt, with jitter)")
      ->capture_default_str()->check(DurationCheck());
  cmd->add_option("--delivery-timeout", (*flags)["delivery-timeout"],
                  "timeout of one webhook attempt")
      ->capture_default_str()->check(DurationCheck());
  cmd->add_option("--max-connections-per-host", options->webhook.max_connections_per_host,
                  "webhook connections (concurrent attempts) per target host")
      ->capture_default_str()->check(CLI::Range(1, 10000));
  cmd->add_option("--max-webhook-connections", options->webhook.max_connections,
                  "webhook connections open at once over all hosts (beyond it attempts wait)")
      ->capture_default_str()->check(CLI::Range(1, 1'000'000));
  auto flow_rate = std::make_shared<double>(0);
  auto flow_in_flight = std::make_shared<std::int64_t>(0);
  cmd->add_option("--flow-default-rate", *flow_rate,
                  "flow control: attempts a second of a flow without settings of its own (per "
                  "target host:port by default), with a burst of a tenth of a second; 0: no "
                  "limit (docs/flows.md)")
      ->capture_default_str()->check(CLI::Range(0.0, 1'000'000.0));
  cmd->add_option("--flow-default-max-in-flight", *flow_in_flight,
                  "flow control: attempts in flight at once of a flow without settings of its "
                  "own; 0: no cap")
      ->capture_default_str()->check(CLI::Range(std::int64_t{0}, std::int64_t{1'000'000}));
  cmd->add_option("--payload-limit", options->limits.payload_limit,
                  "largest payload in bytes (serialized JSON)")
      ->capture_default_str()->check(CLI::Range(1, 64 << 20));
  cmd->add_option("--max-batch", options->limits.max_batch, "most timers per batch request")
      ->capture_default_str()->check(CLI::Range(1, 1'000'000));
  cmd->add_option("--body-limit", options->http.body_limit, "largest request body in bytes")
      ->capture_default_str()->check(CLI::Range(std::size_t{1024}, std::size_t{1} << 30));
  cmd->add_option("--max-connections", options->http.max_connections,
                  "API connections at once (beyond it: 503)")
      ->capture_default_str()->check(CLI::Range(1, 1'000'000));
  cmd->add_option("--max-request-memory", options->http.max_request_memory,
                  "bytes that requests being served may hold at once (beyond it: 503)")
      ->capture_default_str()->check(CLI::Range(std::size_t{1} << 20, std::size_t{1} << 40));
  cmd->add_option("--max-connections-per-client", options->http.max_connections_per_client,
                  "API connections one client address may hold at once (beyond it: closed)")
      ->capture_default_str()->check(CLI::Range(1, 1'000'000));
  cmd->add_option("--header-timeout", (*flags)["header-timeout"],
                  "a request's headers must arrive within this of its first byte")
      ->capture_default_str()->check(DurationCheck());
  cmd->add_option("--body-timeout", (*flags)["body-timeout"],
                  "an admitted request's body must arrive within this of its headers (and "
                  "an answer be written within this)")
      ->capture_default_str()->check(DurationCheck());
  cmd->add_option("--max-writes", options->store.max_writes,
                  "API writes waiting for the store at once (beyond them: 503 overloaded)")
      ->capture_default_str()->check(CLI::Range(std::size_t{1}, std::size_t{1} << 20));
  cmd->add_option("--store-timeout", (*flags)["store-timeout"],
                  "an API request waits at most this long for the store (then 503)")
      ->capture_default_str()->check(DurationCheck());
  cmd->add_option("--horizon", (*flags)["horizon"], "latest fire time accepted, from now")
      ->capture_default_str()->check(DurationCheck());
  cmd->add_option("--drain-timeout", (*flags)["drain-timeout"],
                  "on SIGTERM, how long to wait for attempts in flight")
      ->capture_default_str()->check(DurationCheck());
  cmd->add_option("--retention", (*flags)["retention"],
                  "delete delivered and cancelled timers this long after they finished "
                  "(0s: keep them)")
      ->capture_default_str()->check(DurationCheck());
  cmd->add_flag("--pause-delivery", options->pause_delivery,
                "start without firing timers (reads and writes are served) until "
                "`tickwheel delivery resume`: for a move between stores");
  cmd->add_option("--log-level", options->log_level,
                  "trace, debug (adds a line per delivery attempt), info, warn, error")
      ->capture_default_str()
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));
  // Access.
  cmd->add_option("--auth-token-file", options->auth_token_file,
                  "API tokens, one \"ROLE TOKEN\" a line (ROLE: admin or read); without it "
                  "the server listens on loopback only")
      ->check(CLI::ExistingFile);
  cmd->add_flag("--metrics-auth", options->metrics_auth,
                "/metrics needs a token too (read or admin)");
  cmd->add_flag("--allow-unauthenticated", options->allow_unauthenticated,
                "listen on a non-loopback address without --auth-token-file (something in "
                "front must authenticate)");
  cmd->add_flag("--ui", options->ui,
                "serve the web console at /ui/ (it asks for a token when there are tokens; a "
                "read token gets a read-only console)");
  cmd->add_option("--tls-cert", options->tls_cert,
                  "PEM certificate chain: serve the API over HTTPS (with --tls-key)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--tls-key", options->tls_key, "PEM private key of --tls-cert")
      ->check(CLI::ExistingFile);
  cmd->add_option("--public-host", options->public_hosts,
                  "names clients reach the server by (besides IP addresses, localhost and the "
                  "--listen name); other Host headers are refused (DNS rebinding)")
      ->delimiter(',');
  cmd->add_option("--allow-origin", options->allow_origins,
                  "web origins (https://ops.example.com) whose pages may call the API; other "
                  "pages are refused (the console is same-origin)")
      ->delimiter(',');
  // Delivery security.
  cmd->add_option("--ca-file", options->ca_file,
                  "PEM CA certificates trusted for https:// targets besides the system's")
      ->check(CLI::ExistingFile);
  cmd->add_flag("--insecure-skip-verify", options->insecure_skip_verify,
                "TESTS ONLY: do not check the certificates of https:// targets");
  cmd->add_option("--webhook-secret-file", options->webhook_secret_file,
                  "sign deliveries (Standard Webhooks): one whsec_<base64> secret a line, "
                  "each signs (rotation)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--target-allow", options->target_allow,
                  "SSRF guard: only these CIDRs and host names (*.example.com) may be targets "
                  "(repeat or separate with commas)")
      ->delimiter(',');
  cmd->add_option("--target-deny", options->target_deny,
                  "SSRF guard: these CIDRs and host names may not be targets (link-local and "
                  "169.254.169.254 never may, unless allowed)")
      ->delimiter(',');
  cmd->callback([options, flags, data_dir, &exit_code, flow_rate, flow_in_flight] {
    options->data_dir_given = data_dir->count() > 0;
    if (*flow_rate > 0) options->flow_defaults.rate_per_s = *flow_rate;
    if (*flow_in_flight > 0) options->flow_defaults.max_in_flight = *flow_in_flight;
    options->lease = Ms((*flags)["lease"]);
    if (options->lease < std::chrono::seconds(1)) {
      throw CLI::ValidationError("--lease", "must be at least 1s");
    }
    options->scheduler.window = Ms((*flags)["window"]);
    const std::int64_t backoff_ms = Ms((*flags)["backoff"]).count();
    if (backoff_ms < 1 || backoff_ms > 24LL * 3600 * 1000) {
      throw CLI::ValidationError("--backoff", "must be 1ms..24h, not " + (*flags)["backoff"]);
    }
    options->limits.default_backoff_ms = static_cast<std::uint32_t>(backoff_ms);
    options->webhook.timeout = Ms((*flags)["delivery-timeout"]);
    options->limits.horizon_ms = Ms((*flags)["horizon"]).count();
    options->drain_timeout = Ms((*flags)["drain-timeout"]);
    options->retention = Ms((*flags)["retention"]);
    options->store.timeout = Ms((*flags)["store-timeout"]);
    options->http.header_timeout = Ms((*flags)["header-timeout"]);
    options->http.read_timeout = Ms((*flags)["body-timeout"]);
    options->max_clock_offset = Ms((*flags)["max-clock-offset"]);
    if (options->store.timeout.count() < 100) {
      throw CLI::ValidationError("--store-timeout", "must be at least 100ms");
    }
    if (options->http.header_timeout.count() < 100) {
      throw CLI::ValidationError("--header-timeout", "must be at least 100ms");
    }
    if (options->http.read_timeout.count() < 100) {
      throw CLI::ValidationError("--body-timeout", "must be at least 100ms");
    }
    if (options->scheduler.window.count() < 100) {
      throw CLI::ValidationError("--window", "must be at least 100ms");
    }
    exit_code = server::RunServe(*options);
  });
}

}  // namespace tickwheel::app
