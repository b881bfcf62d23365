#include "server_commands.h"

#include <CLI/CLI.hpp>
#include <boost/json.hpp>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <memory>

#include "cli/blocking_http_client.h"
#include "client_flags.h"
#include "duration_flag.h"
#include "serve/serve.h"

namespace tickwheel::app {

namespace json = boost::json;
using server::BlockingHttpClient;
using server::HttpCallResult;

namespace {

// A CLI11 validator-transform for durations ("30s", "250ms").
CLI::Validator DurationCheck() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        if (!ParseDuration(text)) {
          return "\"" + text + "\" is not a duration (e.g. 30s, 250ms, 2h)";
        }
        return "";
      },
      "DURATION");
}

std::chrono::milliseconds Ms(const std::string& text) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(*ParseDuration(text));
}

// "2026-11-23T10:47:40.087Z (in 29.5s)" for Unix ms.
std::string FormatTime(std::int64_t ms) {
  const std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  const std::int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
  const std::int64_t delta = ms - now;
  const double abs_ms = static_cast<double>(delta < 0 ? -delta : delta);
  char rel[32];
  if (abs_ms < 1000) {
    std::snprintf(rel, sizeof rel, "%.0fms", abs_ms);
  } else if (abs_ms < 120e3) {
    std::snprintf(rel, sizeof rel, "%.1fs", abs_ms / 1e3);
  } else if (abs_ms < 7200e3) {
    std::snprintf(rel, sizeof rel, "%.0fm", abs_ms / 60e3);
  } else if (abs_ms < 172800e3) {
    std::snprintf(rel, sizeof rel, "%.1fh", abs_ms / 3600e3);
  } else {
    std::snprintf(rel, sizeof rel, "%.1fd", abs_ms / 86400e3);
  }
  char out[128];
  std::snprintf(out, sizeof out, "%s.%03dZ (%s%s%s)", buf, static_cast<int>(ms % 1000),
                delta < 0 ? "" : "in ", rel, delta < 0 ? " ago" : "");
  return out;
}

std::string Str(const json::object& o, const char* key) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr) return "";
  if (v->is_string()) return std::string(v->as_string());
  return json::serialize(*v);
}

std::string Target(const json::object& t) {
  const json::object& target = t.at("target").as_object();
  return target.contains("nats") ? "nats:" + Str(target, "nats") : Str(target, "url");
}

// One timer, for people.
void PrintTimer(const json::object& t) {
  std::printf("id:         %s\n", Str(t, "id").c_str());
  std::printf("state:      %s\n", Str(t, "state").c_str());
  std::printf("fire at:    %s\n", FormatTime(t.at("fire_at_ms").as_int64()).c_str());
  if (t.contains("next_attempt_ms") && t.at("attempts").as_int64() > 0) {
    std::printf("next try:   %s\n", FormatTime(t.at("next_attempt_ms").as_int64()).c_str());
  }
  std::printf("attempts:   %lld of %s\n", static_cast<long long>(t.at("attempts").as_int64()),
              Str(t.at("retry").as_object(), "max_attempts").c_str());
  std::printf("target:     %s\n", Target(t).c_str());
  std::printf("payload:    %s\n", Str(t, "payload").c_str());
  if (t.contains("last_error")) std::printf("last error: %s\n", Str(t, "last_error").c_str());
  if (const json::value* log = t.if_contains("attempt_log"); log && log->is_array()) {
    const bool nats = t.at("target").as_object().contains("nats");
    const json::array& entries = log->as_array();
    std::printf("last %zu attempt%s:\n", entries.size(), entries.size() == 1 ? "" : "s");
    for (const json::value& v : entries) {
      const json::object& a = v.as_object();
      std::string outcome;
      if (a.contains("status")) outcome = "HTTP " + Str(a, "status");
      if (a.contains("error")) {
        if (!a.contains("status")) outcome = Str(a, "error");
      } else if (!a.contains("status")) {
        outcome = nats ? "acknowledged by JetStream" : "delivered";
      }
      std::printf("  %s  %6s ms  %s\n",
                  FormatTime(a.at("started_ms").as_int64()).substr(0, 23).c_str(),
                  Str(a, "duration_ms").c_str(), outcome.c_str());
    }
  }
}

// Timers as a table, for people.
void PrintTable(const json::object& body) {
  std::printf("%-34s %-10s %-24s %-8s %s\n", "ID", "STATE", "DUE (UTC)", "ATTEMPTS",
              "TARGET / LAST ERROR");
  for (const json::value& v : body.at("timers").as_array()) {
    const json::object& t = v.as_object();
    const std::int64_t due = t.contains("next_attempt_ms") ? t.at("next_attempt_ms").as_int64()
                                                           : t.at("fire_at_ms").as_int64();
    std::string when = FormatTime(due).substr(0, 23);
    std::string last = t.contains("last_error") ? "  (" + Str(t, "last_error") + ")" : "";
    std::printf("%-34s %-10s %-24s %-8s %s%s\n", Str(t, "id").c_str(), Str(t, "state").c_str(),
                when.c_str(), Str(t, "attempts").c_str(), Target(t).c_str(), last.c_str());
  }
  if (body.contains("next_after")) {
    std::printf("(more: --after %s)\n", Str(body, "next_after").c_str());
  }
}

enum class Output { kJson, kTimer, kTable };

// Prints the answer on success (exit 0): raw JSON, or for people; the
// error's code and message otherwise (exit 1).
int Report(const HttpCallResult& r, Output output = Output::kJson) {
  if (r.status == 0) {
    std::fprintf(stderr, "tickwheel: %s\n", r.error.c_str());
    return 1;
  }
  boost::system::error_code ec;
  json::value v = json::parse(r.body, ec);
  if (r.status >= 200 && r.status < 300) {
    if (ec || !v.is_object() || output == Output::kJson) {
      std::printf("%s\n", r.body.c_str());
    } else if (output == Output::kTimer) {
      PrintTimer(v.as_object());
    } else {
      PrintTable(v.as_object());
    }
    return 0;
  }
  if (!ec && v.is_object() && v.as_object().contains("error")) {
    const auto& e = v.at("error").as_object();
    std::fprintf(stderr, "tickwheel: HTTP %d %s: %s\n", r.status,
                 json::value_to<std::string>(e.at("code")).c_str(),
                 json::value_to<std::string>(e.at("message")).c_str());
  } else {
    std::fprintf(stderr, "tickwheel: HTTP %d: %s\n", r.status, r.body.c_str());
  }
  return 1;
}

void AddServe(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<server::ServeOptions>();
  auto flags = std::make_shared<std::map<std::string, std::string>>(
      std::map<std::string, std::string>{{"window", "60s"},
                                         {"backoff", "1s"},
                                         {"delivery-timeout", "10s"},
                                         {"horizon", "3650d"},
                                         {"drain-timeout", "30s"},
                                         {"retention", "7d"},
                                         {"lease", "10s"}});
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
                  "cluster mode: this node's name (default: the --listen address)");
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
  cmd->callback([options, flags, data_dir, &exit_code] {
    options->data_dir_given = data_dir->count() > 0;
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
    if (options->scheduler.window.count() < 100) {
      throw CLI::ValidationError("--window", "must be at least 100ms");
    }
    exit_code = server::RunServe(*options);
  });
}

void AddClientCommands(CLI::App& app, int& exit_code) {
  auto common = std::make_shared<ClientFlags>();
  auto server_flag = [common](CLI::App* cmd) { common->AddTo(*cmd); };

  struct AddFlags {
    std::string in, url, nats, payload, id;
    std::int64_t at = -1;
    int max_attempts = 0;
  };
  auto add = std::make_shared<AddFlags>();
  CLI::App* add_cmd = app.add_subcommand("add", "Create a timer on a server");
  server_flag(add_cmd);
  auto* in_opt = add_cmd->add_option("--in", add->in, "fire after this long (e.g. 30s)")
                     ->check(DurationCheck());
  add_cmd->add_option("--at", add->at, "fire at this Unix time in ms")->excludes(in_opt);
  auto* url_opt = add_cmd->add_option("--url", add->url, "webhook to POST to");
  add_cmd->add_option("--nats", add->nats, "JetStream subject to publish to (instead of --url)")
      ->excludes(url_opt);
  add_cmd->add_option("--payload", add->payload, "JSON payload");
  add_cmd->add_option("--id", add->id, "the timer's id (default: generated)");
  add_cmd->add_option("--max-attempts", add->max_attempts, "delivery attempts")
      ->check(CLI::Range(1, 100));
  add_cmd->callback([add, common, &exit_code] {
    json::object body;
    if (!add->id.empty()) body["id"] = add->id;
    if (add->at >= 0) {
      body["fire_at_ms"] = add->at;
    } else {
      body["delay_ms"] = add->in.empty() ? 0 : Ms(add->in).count();
    }
    if (add->url.empty() && add->nats.empty()) {
      std::fprintf(stderr, "tickwheel: give --url or --nats\n");
      exit_code = 2;
      return;
    }
    json::object target;
    if (!add->nats.empty()) {
      target["nats"] = add->nats;
    } else {
      target["url"] = add->url;
    }
    body["target"] = std::move(target);
    if (!add->payload.empty()) {
      boost::system::error_code ec;
      json::value payload = json::parse(add->payload, ec);
      if (ec) {
        std::fprintf(stderr, "tickwheel: --payload is not valid JSON: %s\n",
                     ec.message().c_str());
        exit_code = 2;
        return;
      }
      body["payload"] = std::move(payload);
    }
    if (add->max_attempts > 0) body["retry"] = json::object{{"max_attempts", add->max_attempts}};
    auto client = common->Client();
    if (!client) return void(exit_code = 2);
    exit_code = Report(client->Call("POST", "/v1/timers", json::serialize(body)),
                       common->json ? Output::kJson : Output::kTimer);
  });

  auto id = std::make_shared<std::string>();
  CLI::App* get_cmd = app.add_subcommand("get", "Show a timer");
  server_flag(get_cmd);
  get_cmd->add_option("id", *id, "the timer's id")->required();
  get_cmd->callback([id, common, &exit_code] {
    auto client = common->Client();
    if (!client) return void(exit_code = 2);
    exit_code = Report(client->Call("GET", "/v1/timers/" + *id),
                       common->json ? Output::kJson : Output::kTimer);
  });

  auto cancel_id = std::make_shared<std::string>();
  CLI::App* cancel_cmd = app.add_subcommand("cancel", "Cancel a pending timer");
  server_flag(cancel_cmd);
  cancel_cmd->add_option("id", *cancel_id, "the timer's id")->required();
  cancel_cmd->callback([cancel_id, common, &exit_code] {
    auto client = common->Client();
    if (!client) return void(exit_code = 2);
    exit_code = Report(client->Call("DELETE", "/v1/timers/" + *cancel_id),
                       common->json ? Output::kJson : Output::kTimer);
  });

  struct LsFlags {
    std::string state = "pending";
    int limit = 100;
    std::string after;
  };
  auto ls = std::make_shared<LsFlags>();
  CLI::App* ls_cmd = app.add_subcommand("ls", "List timers in a state");
  server_flag(ls_cmd);
  ls_cmd->add_option("--state", ls->state, "pending, delivering, delivered, failed, cancelled")
      ->capture_default_str()
      ->check(CLI::IsMember({"pending", "delivering", "delivered", "failed", "cancelled"}));
  ls_cmd->add_option("--limit", ls->limit, "at most this many")
      ->capture_default_str()->check(CLI::Range(1, 1000));
  ls_cmd->add_option("--after", ls->after, "start after this id (paging)");
  ls_cmd->callback([ls, common, &exit_code] {
    auto client = common->Client();
    if (!client) return void(exit_code = 2);
    exit_code = Report(client->Call("GET", "/v1/timers?state=" + ls->state + "&limit=" +
                                              std::to_string(ls->limit) +
                                              (ls->after.empty() ? "" : "&after=" + ls->after)),
                       common->json ? Output::kJson : Output::kTable);
  });
}

}  // namespace

void RegisterServerCommands(CLI::App& app, int& exit_code) {
  AddServe(app, exit_code);
  AddClientCommands(app, exit_code);
}

}  // namespace tickwheel::app
