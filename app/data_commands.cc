// SPDX-License-Identifier: Apache-2.0
// Data in and out of a server (docs/operations.md, Backup; Export and
// import; Moving from the embedded store to a cluster): `tickwheel backup`,
// `export`, `import`, and `delivery` / `writes` `pause|resume`. Exit codes
// as every command's (exit_codes.h); an import that found conflicts, or a
// file that ends before its export did, exits 1 (kExitFailed) after
// importing the rest.
#include <CLI/CLI.hpp>
#include <unistd.h>

#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "client.h"
#include "commands.h"
#include "exit_codes.h"

namespace tickwheel::app {

namespace json = boost::json;
using server::HttpCallResult;
using Clock = std::chrono::steady_clock;

namespace {

// "HTTP 409 backup_exists: /x exists ..." for an error answer.
std::string Describe(const HttpCallResult& r) {
  if (r.status == 0) return r.error;
  boost::system::error_code ec;
  json::value v = json::parse(r.body, ec);
  if (!ec && v.is_object() && v.as_object().contains("error")) {
    const json::object& e = v.at("error").as_object();
    return "HTTP " + std::to_string(r.status) + " " + std::string(e.at("code").as_string()) +
           ": " + std::string(e.at("message").as_string());
  }
  return "HTTP " + std::to_string(r.status) + ": " + r.body.substr(0, 500);
}

// A call that is tried again (same request) when the server could not be
// reached or answered 503, up to `tries` times, waiting 0.5, 1, 2, ... s.
// For requests that may be repeated (export pages by cursor, imports).
// The data commands' clients are made with no retries of their own
// (ClientFlags::Client(timeout, 0)): this loop, with its 8 tries and its
// message, is theirs.
HttpCallResult CallAgainOn503(client::Client& client, std::string_view method,
                              const std::string& target, std::string_view body, int tries = 8) {
  HttpCallResult r;
  auto pause = std::chrono::milliseconds(500);
  for (int i = 0; i < tries; ++i) {
    r = client.Call(method, target, body);
    if (r.status != 0 && r.status != 503) return r;
    if (i + 1 < tries) {
      std::fprintf(stderr, "tickwheel: %s; trying again in %.1f s\n", Describe(r).c_str(),
                   static_cast<double>(pause.count()) / 1000);
      std::this_thread::sleep_for(pause);
      pause = std::min<std::chrono::milliseconds>(pause * 2, std::chrono::seconds(8));
    }
  }
  return r;
}

std::string Grouped(std::int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (n < 0 ? "-" : "") + out;
}

// Progress on a terminal (stderr), redrawn at most four times a second:
// "import: 120,000/1,000,000 timers (12%), 45,210 timers/s, <extra>".
class Progress {
 public:
  Progress(const char* verb, bool enabled) : verb_(verb), enabled_(enabled) {}
  void set_total(std::int64_t total) { total_ = total; }
  void Show(std::int64_t done, const std::string& extra, bool force = false) {
    if (!enabled_) return;
    const auto now = Clock::now();
    if (!force && now - last_ < std::chrono::milliseconds(250)) return;
    last_ = now;
    std::string line = std::string(verb_) + ": " + Grouped(done);
    if (total_ >= 0) {
      line += "/" + Grouped(total_) + " timers";
      if (total_ > 0) line += " (" + std::to_string(done * 100 / total_) + "%)";
    } else {
      line += " timers";
    }
    line += ", " + Grouped(static_cast<std::int64_t>(Rate(done))) + " timers/s";
    if (!extra.empty()) line += ", " + extra;
    std::fprintf(stderr, "\r%s\033[K", line.c_str());
    shown_ = true;
  }
  void End() {
    if (shown_) std::fprintf(stderr, "\n");
  }
  double Rate(std::int64_t done) const {
    const double s = std::chrono::duration<double>(Clock::now() - start_).count();
    return s > 0 ? static_cast<double>(done) / s : 0;
  }
  double seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

 private:
  const char* verb_;
  const bool enabled_;
  std::int64_t total_ = -1;
  Clock::time_point start_ = Clock::now();
  Clock::time_point last_;
  bool shown_ = false;
};

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// ---- backup ----

void AddBackup(CLI::App& app, int& exit_code) {
  auto flags = std::make_shared<ClientFlags>();
  auto to = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "backup",
      "Take a hot backup of a server's embedded store into a new directory on the server's "
      "machine (a RocksDB checkpoint; `tickwheel serve --data-dir DIR` starts from it)");
  flags->AddTo(cmd);
  cmd->add_option("--to", *to,
                  "the backup's directory: an absolute path on the server's machine that does "
                  "not exist yet (on the data directory's filesystem, tables are hard links)")
      ->required();
  cmd->callback([flags, to, &exit_code] {
    auto client = flags->Client(std::chrono::hours(1), 0);
    if (!client) return void(exit_code = kExitUsage);
    HttpCallResult r = client->Call("POST", "/v1/admin/backup",
                                    json::serialize(json::object{{"to", *to}}));
    if (r.status != 201) {
      std::fprintf(stderr, "tickwheel: backup failed\n");
      return void(exit_code = ReportError(r));
    }
    if (flags->json) {
      std::printf("%s\n", r.body.c_str());
    } else {
      json::value v = json::parse(r.body);
      std::printf("backup in %s: %s bytes in %s files, taken in %s ms (record format %s, "
                  "tickwheel %s)\nstart a server on it with: tickwheel serve --data-dir %s "
                  "(on a copy, to keep the backup as it is)\n",
                  std::string(v.at("dir").as_string()).c_str(),
                  Grouped(v.at("bytes").to_number<std::int64_t>()).c_str(),
                  Grouped(v.at("files").to_number<std::int64_t>()).c_str(),
                  Grouped(v.at("took_ms").as_int64()).c_str(),
                  std::to_string(v.at("record_format").as_int64()).c_str(),
                  std::string(v.at("server_version").as_string()).c_str(),
                  std::string(v.at("dir").as_string()).c_str());
    }
    exit_code = kExitOk;
  });
}

// ---- export ----

struct ExportFlags {
  std::string state;
  std::size_t page = 1000;
  std::string out;
};

// A timer's line: not the header, the end, a schedule's or a flow's.
bool IsTimerLine(std::string_view line) {
  for (std::string_view kind : {"export", "end", "schedule", "flow"}) {
    if (line.rfind("{\"kind\":\"" + std::string(kind) + "\"", 0) == 0) return false;
  }
  return true;
}

int RunExport(const ClientFlags& flags, const ExportFlags& ex) {
  auto client = flags.Client(std::chrono::minutes(5), 0);
  if (!client) return kExitUsage;
  std::FILE* out = stdout;
  if (!ex.out.empty()) {
    out = std::fopen(ex.out.c_str(), "w");
    if (out == nullptr) {
      std::fprintf(stderr, "tickwheel: cannot write %s\n", ex.out.c_str());
      return kExitUsage;
    }
  }
  Progress progress("export", isatty(2) != 0);
  std::string target = "/v1/admin/export?limit=" + std::to_string(ex.page) +
                       (ex.state.empty() ? "" : "&state=" + PercentEncode(ex.state));
  std::int64_t timers = 0, total = -1;
  bool first = true, ended = false;
  for (;;) {
    // The first request starts a new export: not repeated on a 503 (a
    // second one would only start another); pages after it are.
    HttpCallResult r = first ? client->Call("GET", target) : CallAgainOn503(*client, "GET", target, {});
    if (r.status != 200) {
      progress.End();
      std::fprintf(stderr, "tickwheel: the export failed after %s timers\n",
                   Grouped(timers).c_str());
      if (out != stdout) std::fclose(out);
      return ReportError(r);
    }
    std::string_view body = r.body;
    if (first) {
      const std::string_view header = body.substr(0, body.find('\n'));
      boost::system::error_code ec;
      json::value h = json::parse(header, ec);
      if (!ec && h.is_object() && h.as_object().contains("timers")) {
        total = h.at("timers").to_number<std::int64_t>();
        progress.set_total(total);
      }
    }
    std::int64_t lines = 0;  // of timers
    for (std::size_t at = 0; at < body.size();) {
      const std::size_t nl = std::min(body.find('\n', at), body.size());
      if (IsTimerLine(body.substr(at, nl - at))) ++lines;
      at = nl + 1;
    }
    auto cursor = r.headers.find("tickwheel-export-cursor");
    if (cursor == r.headers.end()) ended = true;
    timers += lines;
    if (std::fwrite(body.data(), 1, body.size(), out) != body.size()) {
      progress.End();
      std::fprintf(stderr, "tickwheel: writing the export failed after %s timers (disk full?)\n",
                   Grouped(timers).c_str());
      if (out != stdout) std::fclose(out);
      return kExitFailed;
    }
    progress.Show(timers, "");
    first = false;
    if (ended) break;
    target = "/v1/admin/export?limit=" + std::to_string(ex.page) + "&cursor=" +
             PercentEncode(cursor->second);
  }
  const bool written = std::fflush(out) == 0 && (out == stdout || std::fclose(out) == 0);
  progress.Show(timers, "", true);
  progress.End();
  if (!written) {
    std::fprintf(stderr, "tickwheel: writing the export failed (disk full?)\n");
    return kExitFailed;
  }
  std::fprintf(stderr, "exported %s timers in %.1f s (%s timers/s)\n", Grouped(timers).c_str(),
               progress.seconds(), Grouped(static_cast<std::int64_t>(progress.Rate(timers))).c_str());
  if (total >= 0 && timers != total) {
    std::fprintf(stderr, "tickwheel: the snapshot counted %s timers but %s were exported\n",
                 Grouped(total).c_str(), Grouped(timers).c_str());
    return kExitFailed;
  }
  return kExitOk;
}

void AddExport(CLI::App& app, int& exit_code) {
  auto flags = std::make_shared<ClientFlags>();
  auto ex = std::make_shared<ExportFlags>();
  CLI::App* cmd = app.add_subcommand(
      "export",
      "Write every timer of a server as JSON lines (to stdout), as of one moment: the "
      "format `tickwheel import` reads");
  flags->AddTo(cmd);
  cmd->add_option("--state", ex->state,
                  "only these states, e.g. pending,failed (default: all five)");
  cmd->add_option("--page", ex->page, "timers per request")
      ->capture_default_str()->check(CLI::Range(1, 10'000));
  cmd->add_option("--out,-o", ex->out, "write to this file instead of stdout");
  cmd->callback([flags, ex, &exit_code] { exit_code = RunExport(*flags, *ex); });
}

// ---- import ----

struct ImportFlags {
  std::string file;        // "" or "-": stdin
  std::size_t batch = 1000;
  std::string checkpoint;  // "" : none
};

// Where an import got to, written after each acknowledged request: the
// input's first line (to know it is the same input), the byte offset and
// line number after the last acknowledged request, and the counts so far.
struct Checkpoint {
  std::string first_line;
  std::int64_t offset = 0;
  std::int64_t line = 0;
  std::int64_t created = 0, existing = 0, conflicts = 0;  // timers, schedules and flows
  std::int64_t timer_lines = 0;  // of the lines up to `line`
};


bool ReadCheckpoint(const std::string& path, Checkpoint& c) {
  std::ifstream in(path);
  if (!in) return false;
  std::stringstream text;
  text << in.rdbuf();
  boost::system::error_code ec;
  json::value v = json::parse(text.str(), ec);
  if (ec || !v.is_object()) return false;
  const json::object& o = v.as_object();
  try {
    c.first_line = std::string(o.at("first_line").as_string());
    c.offset = o.at("offset").as_int64();
    c.line = o.at("line").as_int64();
    c.created = o.at("created").as_int64();
    c.existing = o.at("existing").as_int64();
    c.conflicts = o.at("conflicts").as_int64();
    if (const json::value* t = o.if_contains("timer_lines")) c.timer_lines = t->as_int64();
  } catch (const std::exception&) {
    return false;
  }
  return true;
}

bool WriteCheckpoint(const std::string& path, const Checkpoint& c) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << json::serialize(json::object{{"first_line", c.first_line},
                                        {"offset", c.offset},
                                        {"line", c.line},
                                        {"created", c.created},
                                        {"existing", c.existing},
                                        {"conflicts", c.conflicts},
                                        {"timer_lines", c.timer_lines}})
        << "\n";
    out.flush();
    if (!out) return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

// Reads lines, keeping count of the bytes consumed.
class LineReader {
 public:
  explicit LineReader(std::FILE* in) : in_(in) {}
  ~LineReader() { std::free(buf_); }
  // The next line without its '\n'; false at the end.
  bool Next(std::string& line) {
    const ssize_t n = getline(&buf_, &cap_, in_);
    if (n < 0) return false;
    offset_ += n;
    line.assign(buf_, static_cast<std::size_t>(n));
    if (!line.empty() && line.back() == '\n') line.pop_back();
    return true;
  }
  // Skips to `offset` (seeking, or reading up to it when the input cannot
  // seek).
  bool SkipTo(std::int64_t offset) {
    if (fseeko(in_, offset, SEEK_SET) == 0) {
      offset_ = offset;
      return true;
    }
    std::string line;
    while (offset_ < offset && Next(line)) {
    }
    return offset_ == offset;
  }
  std::int64_t offset() const { return offset_; }

 private:
  std::FILE* in_;
  char* buf_ = nullptr;
  std::size_t cap_ = 0;
  std::int64_t offset_ = 0;
};

int RunImport(const ClientFlags& flags, const ImportFlags& im) {
  auto client = flags.Client(std::chrono::minutes(5), 0);
  if (!client) return kExitUsage;
  std::FILE* in = stdin;
  const std::string name = im.file.empty() || im.file == "-" ? "stdin" : im.file;
  if (name != "stdin") {
    in = std::fopen(im.file.c_str(), "r");
    if (in == nullptr) {
      std::fprintf(stderr, "tickwheel: cannot read %s\n", im.file.c_str());
      return kExitUsage;
    }
  }
  struct Closer {
    std::FILE* f;
    ~Closer() {
      if (f != stdin) std::fclose(f);
    }
  } closer{in};
  LineReader reader(in);
  Progress progress("import", isatty(2) != 0);
  Checkpoint done;
  std::string line;
  std::int64_t line_no = 0;
  std::int64_t total = -1, timers_seen = 0;
  bool ended = false;
  // The first line names the input (for the checkpoint) and, for an
  // export, how many timers it holds.
  if (!reader.Next(line)) {
    std::fprintf(stderr, "tickwheel: %s is empty\n", name.c_str());
    return kExitFailed;
  }
  ++line_no;
  done.first_line = line;
  {
    boost::system::error_code ec;
    json::value h = json::parse(line, ec);
    if (!ec && h.is_object() && h.as_object().contains("kind") &&
        h.at("kind") == "export" && h.as_object().contains("timers")) {
      total = h.at("timers").to_number<std::int64_t>();
      progress.set_total(total);
    }
  }
  std::string chunk;
  std::int64_t chunk_first_line = 1, chunk_lines = 0;
  bool resumed = false;
  if (!im.checkpoint.empty()) {
    Checkpoint saved;
    if (ReadCheckpoint(im.checkpoint, saved)) {
      if (saved.first_line != done.first_line) {
        std::fprintf(stderr,
                     "tickwheel: --checkpoint %s belongs to another input (its first line "
                     "differs); remove it to import %s from the start\n",
                     im.checkpoint.c_str(), name.c_str());
        return kExitUsage;
      }
      if (!reader.SkipTo(saved.offset)) {
        std::fprintf(stderr, "tickwheel: cannot skip to byte %lld of %s (the checkpoint's)\n",
                     static_cast<long long>(saved.offset), name.c_str());
        return kExitFailed;
      }
      done = saved;
      line_no = saved.line;
      timers_seen = saved.timer_lines;
      resumed = true;
      std::fprintf(stderr, "resuming %s at line %s (%s timers imported before)\n", name.c_str(),
                   Grouped(line_no + 1).c_str(), Grouped(timers_seen).c_str());
    }
  }
  if (!resumed) {
    chunk = line;
    chunk += '\n';
    chunk_lines = 1;
    if (StartsWith(line, "{\"kind\":\"end\"")) ended = true;
    else if (IsTimerLine(line)) ++timers_seen;
  } else {
    chunk_first_line = line_no + 1;
  }
  const std::int64_t timers_before = timers_seen;
  auto counts = [&] {
    return "created " + Grouped(done.created) + ", existing " + Grouped(done.existing) +
           ", conflicts " + Grouped(done.conflicts);
  };
  // Sends the chunk (lines chunk_first_line..line_no); false to stop.
  int failed = kExitOk;
  auto send = [&]() -> bool {
    if (chunk_lines == 0) return true;
    HttpCallResult r = CallAgainOn503(*client, "POST", "/v1/admin/import", chunk);
    if (r.status != 200) {
      progress.End();
      boost::system::error_code ec;
      json::value v = json::parse(r.body, ec);
      const json::value* at = !ec && v.is_object() && v.as_object().contains("error")
                                  ? v.at("error").as_object().if_contains("line")
                                  : nullptr;
      if (at != nullptr) {
        // The server's message starts with the line within the request.
        std::string message(v.at("error").at("message").as_string());
        if (StartsWith(message, "line ")) message.erase(0, message.find(": ") + 2);
        std::fprintf(stderr, "tickwheel: %s line %s: %s (HTTP %d %s)\n", name.c_str(),
                     Grouped(chunk_first_line + at->to_number<std::int64_t>() - 1).c_str(),
                     message.c_str(), r.status,
                     std::string(v.at("error").at("code").as_string()).c_str());
        failed = kExitFailed;
      } else {
        std::fprintf(stderr, "tickwheel: the import failed at lines %s-%s of %s\n",
                     Grouped(chunk_first_line).c_str(), Grouped(line_no).c_str(), name.c_str());
        failed = ReportError(r);
      }
      std::fprintf(stderr,
                   "the lines before line %s are imported; %s\n", Grouped(chunk_first_line).c_str(),
                   im.checkpoint.empty()
                       ? "run the import again to go on (what is imported is skipped)"
                       : "run the same command again to resume from there");
      return false;
    }
    json::value v = json::parse(r.body);
    done.created += v.at("created").to_number<std::int64_t>();
    done.existing += v.at("existing").to_number<std::int64_t>();
    for (const json::value& c : v.at("conflicts").as_array()) {
      ++done.conflicts;
      progress.End();
      std::string what;
      for (const char* kind : {"id", "schedule", "flow"}) {
        if (const json::value* named = c.as_object().if_contains(kind)) {
          what = std::string(kind) + " " + std::string(named->as_string());
        }
      }
      std::fprintf(stderr, "conflict: %s line %s: %s: %s\n", name.c_str(),
                   Grouped(chunk_first_line + c.at("line").to_number<std::int64_t>() - 1).c_str(),
                   what.c_str(), std::string(c.at("message").as_string()).c_str());
    }
    done.offset = reader.offset();
    done.line = line_no;
    done.timer_lines = timers_seen;
    if (!im.checkpoint.empty() && !WriteCheckpoint(im.checkpoint, done)) {
      std::fprintf(stderr, "tickwheel: cannot write --checkpoint %s\n", im.checkpoint.c_str());
    }
    progress.Show(done.created + done.existing + done.conflicts, counts());
    chunk.clear();
    chunk_lines = 0;
    chunk_first_line = line_no + 1;
    return true;
  };
  constexpr std::size_t kMaxChunkBytes = 2 << 20;
  while (reader.Next(line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) {
      if (chunk_lines == 0) chunk_first_line = line_no + 1;
      else chunk += '\n', ++chunk_lines;  // keeps the server's line numbers
      continue;
    }
    if (StartsWith(line, "{\"kind\":\"end\"")) {
      ended = true;
    } else if (IsTimerLine(line)) {
      ++timers_seen;
    }
    chunk += line;
    chunk += '\n';
    ++chunk_lines;
    if (static_cast<std::size_t>(chunk_lines) >= im.batch || chunk.size() >= kMaxChunkBytes) {
      if (!send()) return failed;
    }
  }
  if (std::ferror(in)) {
    progress.End();
    std::fprintf(stderr, "tickwheel: reading %s failed at line %s\n", name.c_str(),
                 Grouped(line_no).c_str());
    return kExitFailed;
  }
  if (!send()) return failed;
  const std::int64_t imported = done.created + done.existing + done.conflicts;
  progress.Show(imported, counts(), true);
  progress.End();
  std::fprintf(stderr, "imported %s records (timers, schedules, flows) in %.1f s (%s/s): %s\n",
               Grouped(imported - timers_before).c_str(), progress.seconds(),
               Grouped(static_cast<std::int64_t>(progress.Rate(imported - timers_before))).c_str(),
               counts().c_str());
  int code = done.conflicts > 0 ? kExitFailed : kExitOk;
  if (total >= 0 && !ended) {
    std::fprintf(stderr,
                 "tickwheel: %s ends without its {\"kind\":\"end\"} line: the export did not "
                 "finish; what it holds is imported\n",
                 name.c_str());
    code = kExitFailed;
  } else if (total >= 0 && timers_seen != total) {
    std::fprintf(stderr, "tickwheel: %s holds %s timer lines, its header says %s\n",
                 name.c_str(), Grouped(timers_seen).c_str(), Grouped(total).c_str());
    code = kExitFailed;
  }
  return code;
}

void AddImport(CLI::App& app, int& exit_code) {
  auto flags = std::make_shared<ClientFlags>();
  auto im = std::make_shared<ImportFlags>();
  CLI::App* cmd = app.add_subcommand(
      "import",
      "Restore timers from JSON lines (what `tickwheel export` writes; stdin by default) into "
      "a server: new ids are created as they were, existing ones are left alone");
  flags->AddTo(cmd);
  cmd->add_option("--file,-f", im->file, "read this file instead of stdin");
  cmd->add_option("--batch", im->batch, "lines per request")
      ->capture_default_str()->check(CLI::Range(1, 10'000));
  cmd->add_option("--checkpoint", im->checkpoint,
                  "record progress in this file after each request, and resume from it "
                  "(an interrupted import run again goes on where it stopped)");
  cmd->callback([flags, im, &exit_code] { exit_code = RunImport(*flags, *im); });
}

// ---- delivery / writes pause|resume ----

void AddSwitch(CLI::App& app, int& exit_code, const char* name, const char* help,
               const char* pause_help, const char* resume_help) {
  auto flags = std::make_shared<ClientFlags>();
  CLI::App* group = app.add_subcommand(name, help);
  group->require_subcommand(1);
  for (const bool pause : {true, false}) {
    CLI::App* cmd = group->add_subcommand(pause ? "pause" : "resume", pause ? pause_help : resume_help);
    flags->AddTo(cmd);
    const std::string target =
        std::string("/v1/admin/") + name + (pause ? ":pause" : ":resume");
    cmd->callback([flags, target, &exit_code] {
      auto client = flags->Client(std::chrono::minutes(5), 0);
      if (!client) return void(exit_code = kExitUsage);
      exit_code = Report(client->Call("POST", target), Output::kJson);
    });
  }
}

}  // namespace

void RegisterDataCommands(CLI::App& app, int& exit_code) {
  AddBackup(app, exit_code);
  AddExport(app, exit_code);
  AddImport(app, exit_code);
  AddSwitch(app, exit_code, "delivery", "Stop or resume firing timers on a server",
            "stop firing timers (reads and writes go on); waits for attempts in flight",
            "fire timers again (those due meanwhile fire at once)");
  AddSwitch(app, exit_code, "writes", "Refuse or take clients' writes on a server",
            "answer creates, reschedules, cancels and retries with 503 writes_paused",
            "take clients' writes again");
}

}  // namespace tickwheel::app
