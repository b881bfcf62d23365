// SPDX-License-Identifier: Apache-2.0
#include "transfer/backup.h"

#include <boost/json.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "store/record_codec.h"

namespace tickwheel::server {

namespace fs = std::filesystem;
namespace json = boost::json;

std::string BackupManifestJson(const BackupManifest& m) {
  return json::serialize(json::object{{"format", 1},
                                      {"record_format", m.record_format},
                                      {"server_version", m.server_version},
                                      {"taken_ms", m.taken_ms},
                                      {"store", "embedded"}}) +
         "\n";
}

Result<BackupResult> BackupTaker::Take(const std::string& asked, std::int64_t now_ms,
                                       const std::string& server_version) {
  fs::path path = fs::path(asked).lexically_normal();
  if (!path.has_filename()) path = path.parent_path();  // "/backups/x/"
  const std::string dir = path.string();
  if (asked.empty() || !path.is_absolute() || path == path.root_path()) {
    return Status::Invalid("invalid_value",
                           "to must be an absolute path on the server's machine, not \"" +
                               asked + "\"",
                           "to");
  }
  std::error_code ec;
  if (!fs::is_directory(path.parent_path(), ec)) {
    return Status::Invalid("invalid_value",
                           path.parent_path().string() +
                               " is not a directory on the server's machine: a backup goes "
                               "into a new directory inside an existing one",
                           "to");
  }
  if (running_.exchange(true)) {
    return Status::Conflict("backup_in_progress",
                            "a backup is being taken; try again when it is done");
  }
  struct Unmark {
    std::atomic<bool>& flag;
    ~Unmark() { flag.store(false); }
  } unmark{running_};
  const auto started = std::chrono::steady_clock::now();
  if (Status s = store_.Checkpoint(dir); !s.ok()) return s;
  BackupResult out;
  out.dir = dir;
  out.manifest = {kRecordFormat, server_version, now_ms};
  {
    std::ofstream file(path / kBackupManifestFile);
    file << BackupManifestJson(out.manifest);
    file.flush();
    if (!file) {
      fs::remove_all(path, ec);
      return Status(StatusCode::kUnavailable, "backup_failed",
                    "could not write " + (path / kBackupManifestFile).string() +
                        "; the backup was removed");
    }
  }
  for (const fs::directory_entry& e : fs::directory_iterator(path, ec)) {
    if (!e.is_regular_file(ec)) continue;
    out.bytes += e.file_size(ec);
    ++out.files;
  }
  out.took_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::steady_clock::now() - started)
                    .count();
  return out;
}

Result<std::optional<BackupManifest>> ReadBackupManifest(const std::string& dir) {
  const fs::path path = fs::path(dir) / kBackupManifestFile;
  std::ifstream file(path);
  if (!file) return std::optional<BackupManifest>();
  std::stringstream text;
  text << file.rdbuf();
  boost::system::error_code ec;
  json::value v = json::parse(text.str(), ec);
  const json::object* o = ec ? nullptr : v.if_object();
  const json::value* format = o ? o->if_contains("record_format") : nullptr;
  const json::value* version = o ? o->if_contains("server_version") : nullptr;
  const json::value* taken = o ? o->if_contains("taken_ms") : nullptr;
  if (!format || !format->is_int64() || !version || !version->is_string() || !taken ||
      !taken->is_int64()) {
    return Status::Corrupt(path.string() +
                           " is not a tickwheel backup manifest (record_format, "
                           "server_version, taken_ms)");
  }
  return std::optional<BackupManifest>(BackupManifest{static_cast<int>(format->as_int64()),
                                                      std::string(version->as_string()),
                                                      taken->as_int64()});
}

Status CheckBackupFormat(const std::string& dir, std::string* note) {
  Result<std::optional<BackupManifest>> m = ReadBackupManifest(dir);
  if (!m.ok()) return m.status();
  if (!*m) return Status::Ok();
  const BackupManifest& b = **m;
  if (b.record_format > kRecordFormat) {
    return Status::Invalid(
        "bad_flag", "--data-dir " + dir + " is a backup taken by tickwheel " + b.server_version +
                        " with record format " + std::to_string(b.record_format) +
                        "; this server reads formats up to " + std::to_string(kRecordFormat) +
                        ": start it with tickwheel " + b.server_version + " or later");
  }
  *note = "--data-dir " + dir + " was a backup taken at " + std::to_string(b.taken_ms) +
          " (Unix ms) by tickwheel " + b.server_version + ", record format " +
          std::to_string(b.record_format);
  return Status::Ok();
}

}  // namespace tickwheel::server
