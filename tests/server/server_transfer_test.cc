// SPDX-License-Identifier: Apache-2.0
// Data in and out of the real `tickwheel serve`, through the real
// `tickwheel` commands: a hot backup while timers are created and
// delivered, then a server on the backup; export -> import into a fresh
// embedded server and into a PostgreSQL node (the exports match line for
// line); an import done twice; an import killed half-way and resumed; and
// the move from the embedded store to a cluster while timers fall due,
// counted by the receiver: each delivered once, none early.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "server_test_util.h"
#include "store/record_codec.h"
#include "support/postgres_server.h"

namespace tickwheel::testing {
namespace {

using server::BlockingHttpClient;
using std::chrono::milliseconds;
using std::chrono::seconds;

std::vector<std::string> Lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

boost::json::object Json(const std::string& line) { return boost::json::parse(line).as_object(); }

// The ids of an export's timer lines.
std::set<std::string> ExportedIds(const std::string& path) {
  std::set<std::string> ids;
  for (const std::string& line : Lines(path)) {
    boost::json::object o = Json(line);
    if (o.at("kind") == "timer") ids.insert(std::string(o.at("id").as_string()));
  }
  return ids;
}

// `tickwheel ARGS` for a server; fails the test unless it exits `rc`.
std::string Tickwheel(const std::string& args, int rc = 0) {
  auto [code, out] = RunTickwheel(args);
  EXPECT_EQ(code, rc) << "tickwheel " << args << "\n" << out;
  return out;
}

// 12,345: how the commands print counts.
std::string Grouped(std::int64_t n) {
  std::string digits = std::to_string(n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// Polls `done` every 20 ms for up to `patience`.
bool WaitUntil(const std::function<bool()>& done, milliseconds patience) {
  const auto until = std::chrono::steady_clock::now() + patience;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(milliseconds(20));
  }
  return true;
}

std::int64_t Count(BlockingHttpClient& client, const std::string& state) {
  JsonCall stats = Call(client, "GET", "/v1/stats");
  if (stats.status != 200) return -1;
  return stats.body.at("counts").at(state).as_int64();
}

// Creates timers through `address()` until stopped, as clients do: 201s
// are acknowledged (id -> fire_at_ms); a 503 (writes paused, a server
// going away) is tried again after a pause, at whatever address() says
// then. Each request waits `pause` first, so the load is paced.
class Creators {
 public:
  Creators(std::function<std::string()> address, std::string url, int threads, int min_delay_ms,
           int max_delay_ms, milliseconds pause)
      : address_(std::move(address)) {
    // Ids of their own ("c<instance>.<thread>-<n>-<k>"): two Creators never
    // create the same id.
    static std::atomic<int> instances{0};
    const std::string prefix = "c" + std::to_string(instances.fetch_add(1)) + ".";
    for (int t = 0; t < threads; ++t) {
      threads_.emplace_back([this, prefix, url, t, min_delay_ms, max_delay_ms, pause] {
        std::mt19937 rng(static_cast<unsigned>(t + 7));
        std::uniform_int_distribution<int> delay(min_delay_ms, max_delay_ms);
        std::string at = address_();
        auto client = std::make_unique<BlockingHttpClient>(at, seconds(5));
        for (int n = 0; !stop_.load(); ++n) {
          const bool batch = n % 3 == 0;
          std::string body;
          for (int k = 0; k < (batch ? 20 : 1); ++k) {
            std::string id = prefix;
            id += std::to_string(t);
            id += '-';
            id += std::to_string(n);
            id += '-';
            id += std::to_string(k);
            if (k > 0) body += ',';
            body += TimerBody(id, delay(rng), url);
          }
          if (batch) body = "{\"timers\":[" + body + "]}";
          for (;;) {  // the same request until it is answered 201 (or the test ends)
            std::this_thread::sleep_for(pause);
            if (address_() != at) {
              at = address_();
              client = std::make_unique<BlockingHttpClient>(at, seconds(5));
            }
            server::HttpCallResult r =
                client->Call("POST", batch ? "/v1/timers:batch" : "/v1/timers", body);
            if (r.status == 201) {
              Acknowledge(r.body, batch);
              break;
            }
            if (r.status == 503) refused_.fetch_add(1);
            if (stop_.load()) break;
            std::this_thread::sleep_for(milliseconds(20));
          }
        }
      });
    }
  }
  ~Creators() { Stop(); }
  void Stop() {
    stop_.store(true);
    for (auto& t : threads_) {
      if (t.joinable()) t.join();
    }
  }
  std::map<std::string, std::int64_t> acked() const {
    std::lock_guard lock(mutex_);
    return acked_;
  }
  std::size_t refused() const { return refused_.load(); }

 private:
  void Acknowledge(const std::string& body, bool batch) {
    boost::json::value v = boost::json::parse(body);
    std::lock_guard lock(mutex_);
    if (batch) {
      for (const auto& item : v.at("timers").as_array()) {
        acked_[std::string(item.at("id").as_string())] = item.at("fire_at_ms").as_int64();
      }
    } else {
      acked_[std::string(v.at("id").as_string())] = v.at("fire_at_ms").as_int64();
    }
  }

  const std::function<std::string()> address_;
  std::atomic<bool> stop_{false};
  std::atomic<std::size_t> refused_{0};
  mutable std::mutex mutex_;
  std::map<std::string, std::int64_t> acked_;
  std::vector<std::thread> threads_;
};

// ---- backup ----

TEST(ServerTransferTest, ABackupTakenUnderLoadHoldsEveryTimerAcknowledgedBeforeIt) {
  TempDir dir;
  WebhookReceiver receiver(2);
  ServerProcess server(Binary(), dir.path() + "/data");
  ASSERT_TRUE(server.Start());
  const std::string address = server.address();
  // Half due within two seconds (delivered while the backup is taken),
  // half in an hour.
  Creators near([&] { return address; }, receiver.url(), 2, 0, 2000, milliseconds(1));
  Creators far([&] { return address; }, receiver.url(), 2, 3'600'000, 3'600'000, milliseconds(1));
  ASSERT_TRUE(WaitUntil([&] { return receiver.count() >= 500 && far.acked().size() >= 1000; },
                        seconds(60)))
      << receiver.count() << " delivered, " << far.acked().size() << " far timers acknowledged, "
      << near.acked().size() << " near ones";
  std::map<std::string, std::int64_t> before = near.acked();
  for (const auto& [id, at] : far.acked()) before[id] = at;
  const std::string backup = dir.path() + "/backup";
  const std::string out = Tickwheel("backup --server " + address + " --to " + backup);
  EXPECT_NE(out.find("backup in " + backup), std::string::npos) << out;
  const std::size_t delivered_during = receiver.count();
  // The load went on during the backup.
  ASSERT_TRUE(WaitUntil([&] { return near.acked().size() + far.acked().size() > before.size() + 200; },
                        seconds(30)));
  near.Stop();
  far.Stop();
  EXPECT_GT(receiver.count(), delivered_during);
  EXPECT_EQ(server.Terminate(), 0);
  // A second backup into the same directory is refused; one into a
  // directory whose parent is missing too.
  ASSERT_TRUE(server.Start());  // (perhaps on another port)
  Tickwheel("backup --server " + server.address() + " --to " + backup, 1);
  Tickwheel("backup --server " + server.address() + " --to " + dir.path() + "/no/such/parent", 1);
  EXPECT_EQ(server.Terminate(), 0);

  boost::json::object manifest = Json(Lines(backup + "/tickwheel-backup.json").at(0));
  EXPECT_EQ(manifest.at("record_format").as_int64(), server::kRecordFormat);
  EXPECT_FALSE(manifest.at("server_version").as_string().empty());
  // A server started on the backup has every timer acknowledged before it.
  ServerProcess restored(Binary(), backup, {"--pause-delivery"});
  ASSERT_TRUE(restored.Start());
  EXPECT_NE(restored.log().find("was a backup taken at"), std::string::npos) << restored.log();
  const std::string file = dir.path() + "/restored.jsonl";
  Tickwheel("export --server " + restored.address() + " -o " + file);
  const std::set<std::string> ids = ExportedIds(file);
  std::size_t missing = 0;
  for (const auto& [id, at] : before) missing += ids.count(id) ? 0 : 1;
  EXPECT_EQ(missing, 0u) << "of " << before.size() << " acknowledged before the backup";
  std::printf("[backup] %zu timers acknowledged before the backup, all in it (%zu timers in it)\n",
              before.size(), ids.size());
  // It is a server like any other.
  BlockingHttpClient client(restored.address());
  EXPECT_EQ(Call(client, "POST", "/v1/timers", TimerBody("after-restore", 60'000, receiver.url())).status,
            201);
}

// ---- export and import ----

// The trace context the waiting timers and the schedule are created in.
const std::vector<std::pair<std::string, std::string>> kTrace = {
    {"traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
    {"tracestate", "rojo=00f067aa0ba902b7"}};

// A server holding timers in every finished and waiting state: delivered,
// dead letters (with their attempts and errors), cancelled, and pending
// ones with headers and payloads.
void MakeTimersInEveryState(const std::string& address, WebhookReceiver& receiver) {
  receiver.SetPolicy([](const Delivery& d) { return d.id.rfind("dead-", 0) == 0 ? 500 : 200; });
  BlockingHttpClient client(address);
  for (int i = 0; i < 10; ++i) {
    const std::string n = std::to_string(i);
    ASSERT_EQ(Call(client, "POST", "/v1/timers", TimerBody("done-" + n, 0, receiver.url())).status, 201);
    ASSERT_EQ(Call(client, "POST", "/v1/timers",
                   TimerBody("dead-" + n, 0, receiver.url(),
                             R"("retry":{"max_attempts":2,"backoff_ms":10})"))
                  .status,
              201);
    ASSERT_EQ(Call(client, "POST", "/v1/timers", TimerBody("gone-" + n, 3'600'000, receiver.url())).status,
              201);
    ASSERT_EQ(Call(client, "DELETE", "/v1/timers/gone-" + n).status, 200);
  }
  std::string batch;
  for (int i = 0; i < 30; ++i) {
    batch += (i ? "," : "");
    batch += "{\"id\":\"wait-" + std::to_string(i) + "\",\"delay_ms\":" +
             std::to_string(3'600'000 + i) + ",\"target\":{\"url\":\"" + receiver.url() +
             "\",\"headers\":{\"X-Tenant\":\"t" + std::to_string(i) +
             "\"}},\"payload\":{\"order\":" + std::to_string(i) + ",\"tags\":[\"a\",\"é\"]}}";
  }
  // In a trace (docs/operations.md): a moved timer keeps it.
  ASSERT_EQ(Call(client, "POST", "/v1/timers:batch", "{\"timers\":[" + batch + "]}", kTrace).status, 201);
  // A schedule (its next occurrence, an hour away, is a pending timer) and
  // a flow's settings go along too.
  ASSERT_EQ(Call(client, "POST", "/v1/schedules",
                 "{\"id\":\"hourly\",\"every_ms\":3600000,\"catch_up\":\"all\",\"target\":{\"url\":\"" +
                     receiver.url() + "\",\"headers\":{\"X-Tenant\":\"s\"}},\"payload\":{\"r\":1}}",
                 kTrace)
                .status,
            201);
  ASSERT_EQ(Call(client, "PUT", "/v1/flows/parked", R"({"rate_per_s":5,"paused":true})").status, 200);
  ASSERT_TRUE(WaitUntil([&] { return Count(client, "delivered") == 10 && Count(client, "failed") == 10; },
                        seconds(60)));
}

// An export's lines but its first: the header says when and from which
// store it was taken.
std::vector<std::string> Timers(const std::string& path) {
  std::vector<std::string> lines = Lines(path);
  EXPECT_FALSE(lines.empty());
  if (!lines.empty()) lines.erase(lines.begin());
  return lines;
}

TEST(ServerTransferTest, AnExportImportedIntoAFreshServerOrAPostgresNodeExportsTheSame) {
  TempDir dir;
  WebhookReceiver receiver(2);
  ServerProcess source(Binary(), dir.path() + "/source");
  ASSERT_TRUE(source.Start());
  MakeTimersInEveryState(source.address(), receiver);
  Tickwheel("delivery pause --server " + source.address());  // nothing in flight
  const std::string exported = dir.path() + "/source.jsonl";
  Tickwheel("export --server " + source.address() + " -o " + exported);
  const std::vector<std::string> lines = Lines(exported);
  // header, 60 timers and the schedule's next occurrence, the schedule, the
  // flow, end
  ASSERT_EQ(lines.size(), 65u);
  boost::json::object header = Json(lines.front());
  EXPECT_EQ(header.at("timers").as_int64(), 61);
  EXPECT_EQ(header.at("store"), "embedded");
  for (const std::string& line : lines) {  // the waiting timers' trace is exported
    boost::json::object timer = Json(line);
    if (!timer.contains("id") || std::string_view(timer.at("id").as_string()).substr(0, 5) != "wait-") {
      continue;
    }
    EXPECT_EQ(timer.at("traceparent").as_string(), kTrace[0].second) << line;
    EXPECT_EQ(timer.at("tracestate").as_string(), kTrace[1].second) << line;
  }
  EXPECT_EQ(Json(lines[62]).at("kind"), "schedule");
  EXPECT_EQ(Json(lines[62]).at("id"), "hourly");
  EXPECT_EQ(Json(lines[63]).at("kind"), "flow");
  EXPECT_EQ(Json(lines[63]).at("settings").at("paused"), true);
  EXPECT_EQ(lines.back(), R"({"kind":"end"})");

  PostgresServer postgres;
  ASSERT_TRUE(postgres.ok()) << postgres.log();
  ServerProcess embedded(Binary(), dir.path() + "/embedded", {"--pause-delivery"});
  ServerProcess node(Binary(), dir.path() + "/node",
                     {"--postgres", postgres.url(), "--shards", "8", "--pause-delivery"});
  ASSERT_TRUE(embedded.Start());
  ASSERT_TRUE(node.Start());
  for (ServerProcess* target : {&embedded, &node}) {
    const std::string out = Tickwheel("import --server " + target->address() + " --file " + exported);
    EXPECT_NE(out.find("created 63, existing 0, conflicts 0"), std::string::npos) << out;
    const std::string again = dir.path() + "/again-" + std::to_string(target->port()) + ".jsonl";
    Tickwheel("export --server " + target->address() + " -o " + again);
    EXPECT_EQ(Timers(again), Timers(exported)) << "diff " << exported << " " << again;
    boost::json::object h = Json(Lines(again).front());
    EXPECT_EQ(h.at("counts"), header.at("counts"));
    EXPECT_EQ(h.at("store"), target == &node ? "postgres" : "embedded");
    // Restored as they were: a dead letter with its attempts and error, a
    // repeated create of a pending one answered 200 (its digest came too).
    BlockingHttpClient client(target->address());
    JsonCall dead = Call(client, "GET", "/v1/timers/dead-3");
    EXPECT_EQ(State(dead), "failed");
    EXPECT_EQ(dead.body.at("attempts").as_int64(), 2);
    EXPECT_EQ(dead.body.at("last_error"), "HTTP 500");
    JsonCall retried = Call(client, "POST", "/v1/timers:batch",
                            "{\"timers\":[" + TimerBody("done-1", 0, receiver.url()) + "]}");
    EXPECT_EQ(retried.status, 200) << retried.raw;
    // The schedule goes on where it was (the same next occurrence); the
    // flow is still paused, with its rate.
    JsonCall hourly = Call(client, "GET", "/v1/schedules/hourly");
    EXPECT_EQ(hourly.status, 200) << hourly.raw;
    EXPECT_EQ(hourly.body.at("traceparent").as_string(), kTrace[0].second) << hourly.raw;
    EXPECT_EQ(hourly.body.at("tracestate").as_string(), kTrace[1].second) << hourly.raw;
    JsonCall parked = Call(client, "GET", "/v1/flows/parked");
    EXPECT_EQ(parked.status, 200) << parked.raw;
    EXPECT_EQ(parked.body.at("settings").at("paused"), true) << parked.raw;
    // The same file again: nothing new (timers, schedule and flow).
    const std::string twice = Tickwheel("import --server " + target->address() + " --file " + exported);
    EXPECT_NE(twice.find("created 0, existing 63, conflicts 0"), std::string::npos) << twice;
  }
}

TEST(ServerTransferTest, ImportingTheSameFileTwiceCreatesNothingNewAndConflictsAreReported) {
  TempDir dir;
  WebhookReceiver receiver(1);
  ServerProcess server(Binary(), dir.path() + "/data", {"--pause-delivery"});
  ASSERT_TRUE(server.Start());
  const std::string file = dir.path() + "/timers.jsonl";
  {
    std::ofstream out(file);
    for (int i = 0; i < 500; ++i) {
      out << R"({"kind":"timer","id":"imp-)" << i << R"(","state":")"
          << (i % 5 == 0 ? "failed" : "pending") << R"(","fire_at_ms":)" << 4'000'000'000'000 + i
          << R"(,"attempts":)" << (i % 5 == 0 ? 3 : 0)
          << R"(,"retry":{"max_attempts":3,"backoff_ms":100},"target":{"url":")" << receiver.url()
          << R"("},"payload":{"i":)" << i << "}" << (i % 5 == 0 ? R"(,"last_error":"HTTP 503")" : "")
          << "}\n";
    }
  }
  const std::string address = server.address();
  std::string first = Tickwheel("import --server " + address + " --batch 64 -f " + file);
  EXPECT_NE(first.find("created 500, existing 0, conflicts 0"), std::string::npos) << first;
  const std::string once = dir.path() + "/once.jsonl";
  Tickwheel("export --server " + address + " -o " + once);
  std::string second = Tickwheel("import --server " + address + " --batch 64 -f " + file);
  EXPECT_NE(second.find("created 0, existing 500, conflicts 0"), std::string::npos) << second;
  const std::string twice = dir.path() + "/twice.jsonl";
  Tickwheel("export --server " + address + " -o " + twice);
  EXPECT_EQ(Timers(twice), Timers(once));
  // A file whose timer 7 differs from the stored one: reported with its
  // line, and the stored timer is left as it was; exit 1.
  const std::string changed = dir.path() + "/changed.jsonl";
  {
    std::vector<std::string> lines = Lines(file);
    const std::size_t at = lines[7].find(R"("i":7)");
    lines[7].replace(at, 5, R"("i":70)");
    std::ofstream out(changed);
    for (const std::string& l : lines) out << l << "\n";
  }
  std::string conflict = Tickwheel("import --server " + address + " -f " + changed, 1);
  EXPECT_NE(conflict.find("conflict: " + changed + " line 8: id imp-7"), std::string::npos) << conflict;
  EXPECT_NE(conflict.find("created 0, existing 499, conflicts 1"), std::string::npos) << conflict;
  BlockingHttpClient client(address);
  EXPECT_EQ(Call(client, "GET", "/v1/timers/imp-7").body.at("payload").at("i").as_int64(), 7);
  // A bad line stops the import there, naming it.
  const std::string bad = dir.path() + "/bad.jsonl";
  WriteFile(bad, Lines(file)[0] + "\n" + R"({"id":"x","state":"pending","fire_at_ms":1,"target":{"url":"gopher://h"}})" + "\n");
  std::string refused = Tickwheel("import --server " + address + " -f " + bad, 1);
  EXPECT_NE(refused.find(bad + " line 2: target.url"), std::string::npos) << refused;
}

// Starts `tickwheel ARGS` (stdout and stderr to `log`); its pid.
pid_t Spawn(const std::vector<std::string>& args, const std::string& log) {
  const pid_t pid = fork();
  if (pid == 0) {
    std::freopen(log.c_str(), "w", stdout);
    std::freopen(log.c_str(), "a", stderr);
    std::vector<char*> argv{const_cast<char*>(Binary())};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(Binary(), argv.data());
    _exit(127);
  }
  return pid;
}

TEST(ServerTransferTest, AnImportKilledHalfWayAndResumedDeliversEachTimerOnce) {
  TempDir dir;
  WebhookReceiver receiver(2);
  ServerProcess server(Binary(), dir.path() + "/data", {"--pause-delivery"});
  ASSERT_TRUE(server.Start());
  constexpr int kTimers = 20'000;
  const std::string file = dir.path() + "/timers.jsonl";
  {
    std::ofstream out(file);
    out << R"({"kind":"export","format":1,"timers":)" << kTimers << "}\n";
    for (int i = 0; i < kTimers; ++i) {
      out << R"({"kind":"timer","id":"k)" << i
          << R"(","state":"pending","fire_at_ms":1000,"retry":{"max_attempts":3,"backoff_ms":100},"target":{"url":")"
          << receiver.url() << R"("},"payload":)" << i << "}\n";
    }
    out << "{\"kind\":\"end\"}\n";
  }
  const std::string checkpoint = dir.path() + "/import.checkpoint";
  const std::vector<std::string> args = {"import", "--server", server.address(), "--file", file,
                                         "--batch", "50", "--checkpoint", checkpoint};
  const pid_t importer = Spawn(args, dir.path() + "/import1.log");
  BlockingHttpClient client(server.address());
  ASSERT_TRUE(WaitUntil([&] { return Count(client, "pending") >= kTimers / 3; }, seconds(120)));
  kill(importer, SIGKILL);
  int status = 0;
  waitpid(importer, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the import finished before it could be killed";
  const std::int64_t before = Count(client, "pending");
  ASSERT_LT(before, kTimers);
  // Run again: it goes on from its checkpoint.
  std::string out = Tickwheel("import --server " + server.address() + " --file " + file +
                              " --batch 50 --checkpoint " + checkpoint);
  EXPECT_NE(out.find("resuming " + file + " at line"), std::string::npos) << out;
  EXPECT_EQ(Count(client, "pending"), kTimers);
  Tickwheel("delivery resume --server " + server.address());
  ASSERT_TRUE(receiver.WaitFor(kTimers, seconds(120)));
  std::this_thread::sleep_for(milliseconds(500));  // no more should come
  std::map<std::string, int> times;
  for (const Delivery& d : receiver.deliveries()) ++times[d.id];
  EXPECT_EQ(times.size(), static_cast<std::size_t>(kTimers));
  int twice = 0;
  for (const auto& [id, n] : times) twice += n > 1 ? 1 : 0;
  EXPECT_EQ(twice, 0);
  std::printf("[import] killed after %lld of %d timers, resumed: each delivered once\n",
              static_cast<long long>(before), kTimers);
}

// ---- restoring the cluster's database ----

// Every shard's lease epoch once `node` holds them all (empty if it did not
// within a minute).
std::vector<std::int64_t> Epochs(const ServerProcess& node, int shards) {
  BlockingHttpClient client(node.address());
  std::vector<std::int64_t> epochs;
  WaitUntil(
      [&] {
        JsonCall c = Call(client, "GET", "/v1/cluster");
        if (c.status != 200) return false;
        epochs.clear();
        for (const auto& l : c.body.at("leases").as_array()) {
          if (!l.at("live").as_bool()) return false;
          epochs.push_back(l.at("epoch").as_int64());
        }
        return static_cast<int>(epochs.size()) == shards;
      },
      seconds(60));
  return epochs;
}

// pg_dump of a running cluster, restored after later leases were handed
// out: the restored leases hold epochs a node may still have in memory (a
// node paused through the restore, or another process with the same node
// id); the epochs handed out after the restore are above all of them, so
// such a node's fenced writes cannot match.
TEST(ServerTransferTest, ARestoredClusterDatabaseNeverHandsOutAnEpochAgain) {
  TempDir dir;
  PostgresServer postgres;
  ASSERT_TRUE(postgres.ok()) << postgres.log();
  std::string base = postgres.url();
  base = base.substr(0, base.rfind('/') + 1);
  const std::string bin = "/usr/lib/postgresql/15/bin/";
  ASSERT_EQ(std::system((bin + "createdb --maintenance-db=" + base + "postgres timers").c_str()), 0);
  const std::string url = base + "timers";
  constexpr int kShards = 8;
  ServerProcess node(Binary(), dir.path() + "/node",
                     {"--postgres", url, "--node-id", "n0", "--shards", std::to_string(kShards),
                      "--lease", "2s", "--pause-delivery"});
  ASSERT_TRUE(node.Start());
  ASSERT_EQ(Epochs(node, kShards).size(), static_cast<std::size_t>(kShards));
  BlockingHttpClient client(node.address());
  ASSERT_EQ(Call(client, "POST", "/v1/timers", TimerBody("kept", 3'600'000, "http://127.0.0.1:9/x")).status,
            201);
  const std::string dump = dir.path() + "/timers.dump";
  ASSERT_EQ(std::system((bin + "pg_dump -Fc -f " + dump + " -d " + url).c_str()), 0);
  // Later leases: each restart hands the shards over and takes them again.
  std::int64_t latest = 0;
  for (int restart = 0; restart < 2; ++restart) {
    ASSERT_EQ(node.Terminate(), 0);
    ASSERT_TRUE(node.Start());
    for (std::int64_t e : Epochs(node, kShards)) latest = std::max(latest, e);
  }
  ASSERT_EQ(node.Terminate(), 0);
  ASSERT_EQ(std::system((bin + "pg_restore --clean --if-exists -d " + url + " " + dump).c_str()), 0);
  ASSERT_TRUE(node.Start());
  const std::vector<std::int64_t> after = Epochs(node, kShards);
  ASSERT_EQ(after.size(), static_cast<std::size_t>(kShards));
  for (std::int64_t e : after) EXPECT_GT(e, latest);
  BlockingHttpClient restarted(node.address());  // a restart may take another port
  JsonCall kept = Call(restarted, "GET", "/v1/timers/kept");
  EXPECT_EQ(State(kept), "pending") << kept.status << " " << kept.raw;
}

// ---- access ----

// The admin routes go through the API's admission like every route: no
// token 401, a read token 403 (even for GET export), a wrong method 405.
// writes:pause refuses every client change (timers, schedules, flows) with
// 503 writes_paused, and serves reads and the admin routes; backup and
// delivery:pause/resume answer as documented.
TEST(ServerTransferTest, AdminRoutesNeedAnAdminTokenAndPausedWritesRefuseEveryClientChange) {
  constexpr const char* kAdminToken = "admin-token-transfer-0123456789";
  constexpr const char* kReadToken = "read-token-transfer-0123456789";
  TempDir dir;
  WriteFile(dir.path() + "/tokens",
            std::string("admin ") + kAdminToken + "\nread " + kReadToken + "\n");
  ServerProcess server(Binary(), dir.path() + "/data",
                       {"--auth-token-file", dir.path() + "/tokens", "--pause-delivery"});
  ASSERT_TRUE(server.Start());
  BlockingHttpClient none(server.address());
  BlockingHttpClient reader(server.address(), server::BlockingHttpClientOptions{seconds(30), kReadToken});
  BlockingHttpClient admin(server.address(), server::BlockingHttpClientOptions{seconds(30), kAdminToken});
  EXPECT_EQ(none.Call("GET", "/v1/admin/export").status, 401);
  EXPECT_EQ(reader.Call("GET", "/v1/admin/export").status, 403);
  for (const char* path : {"/v1/admin/backup", "/v1/admin/import", "/v1/admin/delivery:resume",
                           "/v1/admin/writes:pause"}) {
    EXPECT_EQ(reader.Call("POST", path, "{}").status, 403) << path;
  }
  EXPECT_EQ(admin.Call("DELETE", "/v1/admin/import").status, 405);
  EXPECT_EQ(admin.Call("GET", "/v1/admin/export").status, 200);

  ASSERT_EQ(Call(admin, "POST", "/v1/admin/writes:pause").status, 200);
  const std::string url = "http://127.0.0.1:9/x";
  JsonCall create = Call(admin, "POST", "/v1/timers", TimerBody("paused-1", 60'000, url));
  EXPECT_EQ(create.status, 503);
  EXPECT_EQ(create.body.at("error").at("code"), "writes_paused") << create.raw;
  EXPECT_EQ(Call(admin, "POST", "/v1/schedules",
                 "{\"id\":\"s\",\"every_ms\":60000,\"target\":{\"url\":\"" + url + "\"}}")
                .status,
            503);
  EXPECT_EQ(Call(admin, "PUT", "/v1/flows/parked", R"({"paused":true})").status, 503);
  EXPECT_EQ(Call(admin, "GET", "/v1/timers?state=pending").status, 200);
  EXPECT_EQ(Call(admin, "GET", "/healthz").body.at("writes"), "paused");
  // The operator's import is served.
  JsonCall imported = Call(admin, "POST", "/v1/admin/import",
                           R"({"id":"imp","state":"pending","fire_at_ms":4000000000000,)"
                           R"("target":{"url":"http://127.0.0.1:9/x"}})");
  EXPECT_EQ(imported.status, 200) << imported.raw;
  EXPECT_EQ(imported.body.at("created").as_int64(), 1) << imported.raw;
  ASSERT_EQ(Call(admin, "POST", "/v1/admin/writes:resume").status, 200);
  EXPECT_EQ(Call(admin, "POST", "/v1/timers", TimerBody("paused-1", 60'000, url)).status, 201);
  // The other admin routes answer as docs/data.md says (and each
  // documented operation gets its 2xx for api_contract_test): a backup
  // into a new directory, then into the same one; delivery resumed, paused.
  const std::string backup_dir = dir.path() + "/backup";
  JsonCall backup = Call(admin, "POST", "/v1/admin/backup", "{\"to\":\"" + backup_dir + "\"}");
  ASSERT_EQ(backup.status, 201) << backup.raw;
  EXPECT_EQ(std::string(backup.body.at("dir").as_string()), backup_dir) << backup.raw;
  EXPECT_GT(backup.body.at("files").as_int64(), 0) << backup.raw;
  JsonCall again = Call(admin, "POST", "/v1/admin/backup", "{\"to\":\"" + backup_dir + "\"}");
  EXPECT_EQ(again.status, 400) << again.raw;
  EXPECT_EQ(again.body.at("error").at("code"), "backup_exists") << again.raw;
  JsonCall resumed = Call(admin, "POST", "/v1/admin/delivery:resume");
  EXPECT_EQ(resumed.status, 200) << resumed.raw;
  EXPECT_EQ(resumed.body.at("delivery"), "running") << resumed.raw;
  JsonCall paused = Call(admin, "POST", "/v1/admin/delivery:pause");
  EXPECT_EQ(paused.status, 200) << paused.raw;
  EXPECT_EQ(paused.body.at("delivery"), "paused") << paused.raw;
  EXPECT_EQ(paused.body.at("writes"), "accepted") << paused.raw;
  EXPECT_EQ(Call(admin, "GET", "/healthz").body.at("delivery"), "paused");
}

// ---- the move ----

TEST(ServerTransferTest, MovingFromTheEmbeddedStoreToAClusterDeliversEveryTimerOnceNoneEarly) {
  TempDir dir;
  WebhookReceiver receiver(2);
  PostgresServer postgres;
  ASSERT_TRUE(postgres.ok()) << postgres.log();
  ServerProcess old(Binary(), dir.path() + "/old");
  ASSERT_TRUE(old.Start());
  // The cluster waits, not firing, until its timers are in.
  std::vector<std::unique_ptr<ServerProcess>> nodes;
  for (int i = 0; i < 2; ++i) {
    nodes.push_back(std::make_unique<ServerProcess>(
        Binary(), dir.path() + "/node" + std::to_string(i),
        std::vector<std::string>{"--postgres", postgres.url(), "--node-id", "node" + std::to_string(i),
                                 "--shards", "16", "--lease", "2s", "--pause-delivery"}));
    ASSERT_TRUE(nodes.back()->Start());
  }
  // Clients create timers due within 0.2-5 s, at the old address, then at
  // the new one once switched.
  std::mutex mutex;
  std::string current = old.address();
  auto address = [&] {
    std::lock_guard lock(mutex);
    return current;
  };
  // A schedule fires every second throughout, and a flow's settings (a
  // paused flow no timer uses) must come along.
  BlockingHttpClient old_client(old.address());
  ASSERT_EQ(Call(old_client, "POST", "/v1/schedules",
                 "{\"id\":\"tick\",\"every_ms\":1000,\"catch_up\":\"all\",\"target\":{\"url\":\"" +
                     receiver.url() + "\"}}")
                .status,
            201);
  ASSERT_EQ(Call(old_client, "PUT", "/v1/flows/parked", R"({"paused":true})").status, 200);
  Creators creators(address, receiver.url(), 3, 200, 5000, milliseconds(3));
  ASSERT_TRUE(WaitUntil([&] { return receiver.count() >= 300; }, seconds(60)));

  // 1. Stop firing on the old server (attempts in flight finish), 2. stop
  // its writes, 3. export, 4. import into the cluster, 5. switch clients,
  // 6. fire on the cluster, 7. check the counts, 8. stop the old server.
  Tickwheel("delivery pause --server " + old.address());
  const auto writes_off = std::chrono::steady_clock::now();
  Tickwheel("writes pause --server " + old.address());
  const std::string file = dir.path() + "/move.jsonl";
  Tickwheel("export --server " + old.address() + " -o " + file);
  const std::string imported = Tickwheel("import --server " + nodes[0]->address() + " -f " + file);
  {
    std::lock_guard lock(mutex);
    current = nodes[1]->address();
  }
  const double seconds_without_creates =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - writes_off).count();
  for (auto& node : nodes) Tickwheel("delivery resume --server " + node->address());
  boost::json::object header = Json(Lines(file).front());
  const std::int64_t exported = header.at("timers").as_int64();
  // Its timers, the schedule and the flow.
  EXPECT_NE(imported.find("created " + Grouped(exported + 2) + ", existing 0, conflicts 0"),
            std::string::npos)
      << imported;
  BlockingHttpClient cluster(nodes[0]->address());
  // A node's counts are the database's, read once a second: within a few
  // of those reads they hold every timer exported.
  std::int64_t in_cluster = 0;
  WaitUntil(
      [&] {
        in_cluster = 0;
        for (const char* s : {"pending", "delivering", "delivered", "failed", "cancelled"}) {
          in_cluster += Count(cluster, s);
        }
        return in_cluster >= exported;
      },
      seconds(10));
  EXPECT_GE(in_cluster, exported);
  EXPECT_EQ(old.Terminate(), 0);
  // Clients go on a little, then every acknowledged timer must arrive.
  std::this_thread::sleep_for(seconds(2));
  creators.Stop();
  EXPECT_EQ(Call(cluster, "GET", "/v1/flows/parked").body.at("settings").at("paused"), true);
  // The schedule fired on the cluster too; then it stops.
  ASSERT_TRUE(WaitUntil(
      [&] {
        for (const Delivery& d : receiver.deliveries()) {
          if (d.id.rfind("tick@", 0) == 0 && d.fire_at_ms > header.at("taken_ms").as_int64()) return true;
        }
        return false;
      },
      seconds(30)));
  ASSERT_EQ(Call(cluster, "DELETE", "/v1/schedules/tick").status, 200);
  const std::map<std::string, std::int64_t> acked = creators.acked();
  ASSERT_TRUE(WaitUntil(
      [&] {
        std::set<std::string> seen;
        for (const Delivery& d : receiver.deliveries()) {
          if (acked.count(d.id)) seen.insert(d.id);
        }
        return seen.size() >= acked.size();
      },
      seconds(60)));
  std::this_thread::sleep_for(seconds(1));  // a duplicate would come now
  std::map<std::string, int> times;
  std::size_t early = 0, unknown = 0, twice = 0;
  std::set<std::int64_t> ticks;  // the schedule's nominal times delivered
  std::size_t ticks_early = 0;
  for (const Delivery& d : receiver.deliveries()) {
    ++times[d.id];
    if (d.id.rfind("tick@", 0) == 0) {
      ticks.insert(d.fire_at_ms);
      if (d.received_ms < d.fire_at_ms) ++ticks_early;
      continue;
    }
    auto it = acked.find(d.id);
    if (it == acked.end()) {
      ++unknown;  // answered 201 after the clients stopped counting
      continue;
    }
    if (d.received_ms < it->second) ++early;
  }
  for (const auto& [id, n] : times) twice += n > 1 ? 1 : 0;
  std::size_t missing = 0;
  for (const auto& [id, at] : acked) missing += times.count(id) ? 0 : 1;
  EXPECT_EQ(missing, 0u);
  EXPECT_EQ(twice, 0u);
  EXPECT_EQ(early, 0u);
  EXPECT_EQ(unknown, 0u);
  // Each of the schedule's times from its first to its last delivered
  // once (before, during and after the move), none early.
  ASSERT_FALSE(ticks.empty());
  EXPECT_EQ(static_cast<std::int64_t>(ticks.size()),
            (*ticks.rbegin() - *ticks.begin()) / 1000 + 1)
      << "a nominal time was skipped";
  EXPECT_EQ(ticks_early, 0u);
  std::printf("[move] schedule: %zu times delivered once each across the move\n", ticks.size());
  std::printf("[move] %zu timers (%lld moved), each delivered once, none early; creates refused "
              "for %.2f s (%zu 503 answers retried)\n",
              acked.size(), static_cast<long long>(exported), seconds_without_creates,
              creators.refused());
}

}  // namespace
}  // namespace tickwheel::testing
