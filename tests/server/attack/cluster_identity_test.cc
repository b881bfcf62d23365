// SPDX-License-Identifier: Apache-2.0
// Cluster misconfiguration is refused, not silent: a live node id reused,
// two nodes with one listen string, a node whose clock is ahead
// (docs/server.md's "Threat model"). Each test failed on the build before
// its fix.
#include <gtest/gtest.h>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "attack/attack_util.h"
#include "support/postgres_server.h"

namespace tickwheel::testing {
namespace {

using server::BlockingHttpClient;
using std::chrono::milliseconds;
using std::chrono::seconds;

// ---------------------------------------------------------------------------
// Cluster misconfiguration is refused, not silent.

// A second process with a node id a live one holds is refused at start
// (after waiting out a lease, as a crashed predecessor's heartbeat would
// lapse), saying why; the first keeps its heartbeat and its shards.
TEST(ClusterIdentityTest, ASecondProcessWithALiveNodeIdIsRefused) {
  PostgresServer postgres;
  ASSERT_TRUE(postgres.ok()) << postgres.log();
  TempDir dir;
  const std::vector<std::string> args = {"--postgres", postgres.url(), "--shards", "8",
                                         "--node-id", "same", "--lease", "2s"};
  ServerProcess first(Binary(), dir.path() + "/a", args);
  ASSERT_TRUE(first.Start());
  ServerProcess second(Binary(), dir.path() + "/b", args);
  EXPECT_FALSE(second.Start());
  EXPECT_NE(second.log().find("node id \"same\""), std::string::npos) << second.log();
  EXPECT_NE(second.log().find("--node-id"), std::string::npos) << second.log();
  BlockingHttpClient client(first.address());
  const JsonCall cluster = Call(client, "GET", "/v1/cluster");
  ASSERT_EQ(cluster.status, 200) << cluster.raw;
  const auto& nodes = cluster.body.at("nodes").as_array();
  ASSERT_EQ(nodes.size(), 1u) << cluster.raw;
  EXPECT_TRUE(nodes[0].at("self").as_bool()) << cluster.raw;
  EXPECT_TRUE(nodes[0].at("alive").as_bool()) << cluster.raw;
  EXPECT_EQ(Metric(client, "tickwheel_cluster_shards_owned"), 8);
  EXPECT_EQ(first.Terminate(), 0) << first.log();
  // Once the first has stopped (and removed its heartbeat), the id is free.
  ASSERT_TRUE(second.Start());
  EXPECT_EQ(second.Terminate(), 0) << second.log();
}

// The case in one test: two processes with the same --node-id and
// the same --listen string (127.0.0.1:0), as two containers started from
// one configuration. The second is refused at start, saying why; the first
// keeps its heartbeat and all its shards, and its creates still fire.
TEST(ClusterIdentityTest, TheSameNodeIdAndTheSameListenStringAreRefusedNotMerged) {
  PostgresServer postgres;
  ASSERT_TRUE(postgres.ok()) << postgres.log();
  TempDir dir;
  WebhookReceiver receiver;
  const std::vector<std::string> args = {"--postgres", postgres.url(), "--shards", "8",
                                         "--node-id", "same", "--lease", "2s"};
  ServerProcess first(Binary(), dir.path() + "/a", args), second(Binary(), dir.path() + "/b", args);
  first.set_ephemeral_port();
  second.set_ephemeral_port();
  ASSERT_TRUE(first.Start());
  EXPECT_FALSE(second.Start());
  EXPECT_NE(second.log().find("node id \"same\""), std::string::npos) << second.log();
  EXPECT_NE(second.log().find("--node-id"), std::string::npos) << second.log();
  BlockingHttpClient client(first.address());
  const JsonCall cluster = Call(client, "GET", "/v1/cluster");
  ASSERT_EQ(cluster.status, 200) << cluster.raw;
  const auto& nodes = cluster.body.at("nodes").as_array();
  ASSERT_EQ(nodes.size(), 1u) << cluster.raw;
  EXPECT_EQ(nodes[0].at("node_id").as_string(), "same") << cluster.raw;
  EXPECT_TRUE(nodes[0].at("self").as_bool()) << cluster.raw;
  EXPECT_TRUE(nodes[0].at("alive").as_bool()) << cluster.raw;
  EXPECT_EQ(Metric(client, "tickwheel_cluster_shards_owned"), 8);
  EXPECT_EQ(Metric(client, "tickwheel_cluster_identity_ok"), 1);
  // The refused process's exit took nothing from the first: its creates
  // fire on time (no announcement dropped as "my own", no lease lost).
  std::map<std::string, std::int64_t> fire_at;
  for (int i = 0; i < 20; ++i) {
    const std::string id = "s" + std::to_string(i);
    const JsonCall c = Call(client, "POST", "/v1/timers", TimerBody(id, 500, receiver.url()));
    ASSERT_EQ(c.status, 201) << c.raw;
    fire_at[id] = c.body.at("fire_at_ms").as_int64();
  }
  ASSERT_TRUE(receiver.WaitFor(20, seconds(30))) << first.log();
  for (const Delivery& d : receiver.deliveries()) {
    EXPECT_GE(d.received_ms, fire_at[d.id]) << d.id << " early";
    EXPECT_LT(d.received_ms - fire_at[d.id], 3000) << d.id << " late";
  }
  EXPECT_EQ(Metric(client, "tickwheel_cluster_shards_owned"), 8);
  EXPECT_EQ(first.Terminate(), 0) << first.log();
}

// Two nodes started with the same --listen string (port 0: each gets its
// own) and no --node-id, as containers that all listen on 0.0.0.0:8080:
// they get distinct ids, share the shards, see each other's creates at
// once (nothing is dropped as "my own" announcement), and a graceful stop
// of one removes only its heartbeat.
TEST(ClusterIdentityTest, NodesWithTheSameListenStringGetDistinctIdentities) {
  PostgresServer postgres;
  ASSERT_TRUE(postgres.ok()) << postgres.log();
  TempDir dir;
  WebhookReceiver receiver;
  const std::vector<std::string> args = {"--postgres", postgres.url(), "--shards", "16",
                                         "--lease", "2s"};
  ServerProcess a(Binary(), dir.path() + "/a", args), b(Binary(), dir.path() + "/b", args);
  a.set_ephemeral_port();
  b.set_ephemeral_port();
  ASSERT_TRUE(a.Start());
  ASSERT_TRUE(b.Start());
  BlockingHttpClient ca(a.address()), cb(b.address());
  bool settled = false;
  for (int i = 0; i < 500 && !settled; ++i) {
    settled = Metric(ca, "tickwheel_cluster_shards_owned") + Metric(cb, "tickwheel_cluster_shards_owned") == 16 &&
              Metric(ca, "tickwheel_cluster_shards_owned") > 0 && Metric(cb, "tickwheel_cluster_shards_owned") > 0;
    if (!settled) std::this_thread::sleep_for(milliseconds(20));
  }
  ASSERT_TRUE(settled);
  const JsonCall cluster = Call(ca, "GET", "/v1/cluster");
  const auto& nodes = cluster.body.at("nodes").as_array();
  ASSERT_EQ(nodes.size(), 2u) << cluster.raw;
  EXPECT_NE(nodes[0].at("node_id"), nodes[1].at("node_id")) << cluster.raw;
  // Timers created through one node, due within a second, are fired by
  // whichever owns their shard, on time.
  std::map<std::string, std::int64_t> fire_at;
  for (int i = 0; i < 40; ++i) {
    const std::string id = "x" + std::to_string(i);
    const JsonCall c = Call(i % 2 ? ca : cb, "POST", "/v1/timers", TimerBody(id, 800, receiver.url()));
    ASSERT_EQ(c.status, 201) << c.raw;
    fire_at[id] = c.body.at("fire_at_ms").as_int64();
  }
  ASSERT_TRUE(receiver.WaitFor(40, seconds(30)));
  for (const Delivery& d : receiver.deliveries()) {
    EXPECT_GE(d.received_ms, fire_at[d.id]) << d.id << " early";
    EXPECT_LT(d.received_ms - fire_at[d.id], 3000) << d.id << " late: an announcement was dropped";
  }
  EXPECT_EQ(b.Terminate(), 0) << b.log();
  const JsonCall after = Call(ca, "GET", "/v1/cluster");
  bool a_alive = false;
  for (const auto& n : after.body.at("nodes").as_array()) a_alive = a_alive || (n.at("self").as_bool() && n.at("alive").as_bool());
  EXPECT_TRUE(a_alive) << after.raw;
  EXPECT_EQ(a.Terminate(), 0) << a.log();
}

constexpr const char* kFaketime = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1";

// The environment of a node whose wall clock is `offset` ("+5s") ahead of
// the database's (libfaketime; the monotonic clock is left alone). Under
// `make server-asan` libfaketime comes before ASan's runtime in the
// preload list, which ASan refuses at start unless told not to check.
std::vector<std::string> ClockAheadEnv(const std::string& offset) {
  const char* asan = std::getenv("ASAN_OPTIONS");
  return {std::string("LD_PRELOAD=") + kFaketime, "FAKETIME=" + offset,
          "FAKETIME_DONT_FAKE_MONOTONIC=1", "FAKETIME_NO_CACHE=1",
          "ASAN_OPTIONS=" + (asan ? std::string(asan) + ":" : std::string()) +
              "verify_asan_link_order=0"};
}

// A node whose wall clock is 5 s ahead of the database's (libfaketime)
// measures it at every heartbeat, says so (log, /metrics, /v1/cluster),
// and owns no shard; the other node fires everything, never early.
TEST(ClockSkewTest, ANodeWhoseClockIsAheadOwnsNoShardAndNothingFiresEarly) {
  ASSERT_TRUE(std::filesystem::exists(kFaketime)) << "faketime (Debian) is not installed";
  PostgresServer postgres;
  ASSERT_TRUE(postgres.ok()) << postgres.log();
  TempDir dir;
  WebhookReceiver receiver;
  const std::vector<std::string> args = {"--postgres", postgres.url(), "--shards", "16",
                                         "--lease", "2s"};
  ServerProcess good(Binary(), dir.path() + "/good", args), ahead(Binary(), dir.path() + "/ahead", args);
  ahead.set_env(ClockAheadEnv("+5s"));
  ASSERT_TRUE(good.Start());
  ASSERT_TRUE(ahead.Start());
  BlockingHttpClient cg(good.address()), ca(ahead.address());
  bool measured = false;
  for (int i = 0; i < 500 && !measured; ++i) {
    measured = Metric(ca, "tickwheel_cluster_clock_offset_seconds") > 4 &&
               Metric(ca, "tickwheel_cluster_clock_ok") == 0 &&
               Metric(cg, "tickwheel_cluster_shards_owned") == 16;
    if (!measured) std::this_thread::sleep_for(milliseconds(20));
  }
  ASSERT_TRUE(measured) << ahead.log();
  EXPECT_EQ(Metric(ca, "tickwheel_cluster_shards_owned"), 0);
  EXPECT_LT(std::abs(Metric(cg, "tickwheel_cluster_clock_offset_seconds")), 0.5);
  EXPECT_NE(ahead.log().find("ahead of the database"), std::string::npos) << ahead.log();
  // Each node's offset, as of its last heartbeat, in /v1/cluster.
  bool shown = false;
  JsonCall cluster;
  for (int i = 0; i < 300 && !shown; ++i) {
    cluster = Call(cg, "GET", "/v1/cluster");
    for (const auto& n : cluster.body.at("nodes").as_array()) {
      shown = shown || (n.at("clock_offset_ms").is_int64() && n.at("clock_offset_ms").as_int64() > 4000);
    }
    if (!shown) std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_TRUE(shown) << cluster.raw;
  std::map<std::string, std::int64_t> fire_at;
  for (int i = 0; i < 40; ++i) {
    const std::string id = "c" + std::to_string(i);
    const JsonCall c = Call(cg, "POST", "/v1/timers", TimerBody(id, 1000 + 25 * i, receiver.url()));
    ASSERT_EQ(c.status, 201) << c.raw;
    fire_at[id] = c.body.at("fire_at_ms").as_int64();
  }
  ASSERT_TRUE(receiver.WaitFor(40, seconds(30))) << good.log() << ahead.log();
  // Stable: still none for the node ahead.
  EXPECT_EQ(Metric(ca, "tickwheel_cluster_shards_owned"), 0);
  for (const Delivery& d : receiver.deliveries()) {
    EXPECT_GE(d.received_ms, fire_at[d.id]) << d.id << " fired early";
  }
  EXPECT_EQ(ahead.Terminate(), 0) << ahead.log();
  EXPECT_EQ(good.Terminate(), 0) << good.log();
}

// Past the warning threshold (a tenth of --max-clock-offset) but short of
// the refusal: a node 3 s ahead with --max-clock-offset 10s warns (log,
// its offset in /metrics and /v1/cluster, `tickwheel_cluster_clock_ok`
// still 1) and keeps owning shards: the shards are shared and every timer
// is fired.
TEST(ClockSkewTest, ANodePastTheWarningButShortOfTheRefusalWarnsAndKeepsItsShards) {
  ASSERT_TRUE(std::filesystem::exists(kFaketime)) << "faketime (Debian) is not installed";
  PostgresServer postgres;
  ASSERT_TRUE(postgres.ok()) << postgres.log();
  TempDir dir;
  WebhookReceiver receiver;
  const std::vector<std::string> args = {"--postgres", postgres.url(), "--shards", "16",
                                         "--lease", "2s", "--max-clock-offset", "10s"};
  ServerProcess good(Binary(), dir.path() + "/good", args), ahead(Binary(), dir.path() + "/ahead", args);
  ahead.set_env(ClockAheadEnv("+3s"));
  ASSERT_TRUE(good.Start());
  ASSERT_TRUE(ahead.Start());
  BlockingHttpClient cg(good.address()), ca(ahead.address());
  // Measured, warned, and the shards shared between the two.
  bool settled = false;
  for (int i = 0; i < 1000 && !settled; ++i) {
    const double owned_ahead = Metric(ca, "tickwheel_cluster_shards_owned");
    settled = Metric(ca, "tickwheel_cluster_clock_offset_seconds") > 2 && owned_ahead > 0 &&
              owned_ahead + Metric(cg, "tickwheel_cluster_shards_owned") == 16 &&
              ahead.log().find("may be that early or late") != std::string::npos;
    if (!settled) std::this_thread::sleep_for(milliseconds(20));
  }
  ASSERT_TRUE(settled) << ahead.log();
  EXPECT_LT(Metric(ca, "tickwheel_cluster_clock_offset_seconds"), 4);
  EXPECT_EQ(Metric(ca, "tickwheel_cluster_clock_ok"), 1);
  EXPECT_NE(ahead.log().find("ahead of the database"), std::string::npos) << ahead.log();
  EXPECT_EQ(ahead.log().find("gives up its shards and takes none"), std::string::npos) << ahead.log();
  bool shown = false;
  JsonCall cluster;
  for (int i = 0; i < 300 && !shown; ++i) {
    cluster = Call(cg, "GET", "/v1/cluster");
    for (const auto& n : cluster.body.at("nodes").as_array()) {
      shown = shown || (n.at("clock_offset_ms").is_int64() && n.at("clock_offset_ms").as_int64() > 2000 &&
                        n.at("clock_offset_ms").as_int64() < 4000);
    }
    if (!shown) std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_TRUE(shown) << cluster.raw;
  // Every timer is fired, by whichever node owns its shard (the node ahead
  // fires its own up to 3 s early: what the warning says).
  for (int i = 0; i < 40; ++i) {
    ASSERT_EQ(Call(i % 2 ? cg : ca, "POST", "/v1/timers", TimerBody("w" + std::to_string(i), 500, receiver.url())).status,
              201);
  }
  ASSERT_TRUE(receiver.WaitFor(40, seconds(30))) << good.log() << ahead.log();
  EXPECT_GT(Metric(ca, "tickwheel_cluster_shards_owned"), 0);
  EXPECT_EQ(ahead.Terminate(), 0) << ahead.log();
  EXPECT_EQ(good.Terminate(), 0) << good.log();
}

}  // namespace
}  // namespace tickwheel::testing
