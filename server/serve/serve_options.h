// SPDX-License-Identifier: Apache-2.0
// Everything `tickwheel serve` can be told (app/server_commands.cc maps the
// flags onto it; docs/server.md lists them).
#ifndef TICKWHEEL_SERVER_SERVE_SERVE_OPTIONS_H_
#define TICKWHEEL_SERVER_SERVE_SERVE_OPTIONS_H_

#include <chrono>
#include <string>
#include <vector>

#include "api/http_server.h"
#include "api/store_calls.h"
#include "api/timer_request.h"
#include "delivery/webhook_client.h"
#include "flow/flow_settings.h"
#include "scheduler/scheduler.h"

namespace tickwheel::server {

struct ServeOptions {
  std::string listen = "127.0.0.1:8080";
  std::string data_dir = "./data";
  bool data_dir_given = false;  // said on the command line (ignored in cluster mode)
  // Cluster mode: the store is PostgreSQL, shared by the nodes.
  std::string postgres;
  std::string node_id;   // default: the host name and the --listen port
  // Past this offset from the database's clock a node owns no shard.
  std::chrono::milliseconds max_clock_offset{std::chrono::seconds(1)};
  int shards = 0;        // when the schema is created (0: 256)
  std::chrono::milliseconds lease{std::chrono::seconds(10)};
  std::string nats;      // NATS URL; empty: NATS targets are refused
  unsigned threads = 2;  // HTTP server threads
  ApiLimits limits;
  SchedulerOptions scheduler;
  // Flow control (docs/flows.md): the limits of flows without settings of
  // their own (--flow-default-rate, --flow-default-max-in-flight).
  FlowDefaults flow_defaults;
  WebhookClientOptions webhook;
  HttpServerOptions http;
  StoreCallOptions store;  // how API requests reach the store
  std::chrono::milliseconds drain_timeout{std::chrono::seconds(30)};
  // Delivered and cancelled timers are deleted this long after they
  // finished; 0 keeps them forever.
  std::chrono::milliseconds retention{std::chrono::hours(24 * 7)};
  std::string log_level = "info";
  // Start without firing timers (docs/operations.md, moving to a cluster):
  // reads and writes are served; POST /v1/admin/delivery:resume starts it.
  bool pause_delivery = false;

  // Access (docs/server.md, "Access").
  std::string auth_token_file;         // "ROLE TOKEN" lines; empty: no tokens
  bool metrics_auth = false;           // /metrics needs a token too
  bool allow_unauthenticated = false;  // no tokens on a non-loopback address
  std::string tls_cert, tls_key;       // HTTPS for the API (both or neither)
  // Web pages (docs/server.md, "Threat model").
  std::vector<std::string> public_hosts;  // Host names besides IP literals and localhost
  std::vector<std::string> allow_origins;  // other origins whose pages may call the API
  bool ui = false;                     // serve the web console at /ui/ (docs/console.md)

  // Delivery security (docs/server.md, "HTTPS targets", "Signed webhooks",
  // "The SSRF guard").
  std::string ca_file;                // a private CA for https:// targets
  bool insecure_skip_verify = false;  // tests only: no certificate checks
  std::string webhook_secret_file;    // whsec_ secrets; empty: unsigned
  std::vector<std::string> target_allow, target_deny;  // CIDRs and host names
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_SERVE_SERVE_OPTIONS_H_
