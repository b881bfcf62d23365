// SPDX-License-Identifier: Apache-2.0
#include "support/postgres_server.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/server_process.h"

namespace tickwheel::testing {
namespace {

constexpr char kBin[] = "/usr/lib/postgresql/15/bin/";

// Runs as the postgres user when we are root.
std::string AsPostgres(const std::string& command) {
  return getuid() == 0 ? "runuser -u postgres -- " + command : command;
}

}  // namespace

PostgresServer::PostgresServer() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "tickwheel-pg-XXXXXX").string();
  dir_ = mkdtemp(tmpl.data());
  std::filesystem::permissions(dir_, std::filesystem::perms::all);
  if (getuid() == 0 && !Run("chown postgres " + dir_)) return;
  port_ = FreePort();
  ok_ = Run(AsPostgres(std::string(kBin) + "initdb -D " + dir_ + "/data -U postgres -A trust")) &&
        Start();
}

PostgresServer::~PostgresServer() {
  Stop();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

bool PostgresServer::Run(const std::string& command) const {
  return std::system((command + " >> " + dir_ + "/commands.log 2>&1").c_str()) == 0;
}

bool PostgresServer::Start() {
  return Run(AsPostgres(std::string(kBin) + "pg_ctl -D " + dir_ + "/data -l " + dir_ +
                        "/pg.log -w start -o \"-p " + std::to_string(port_) + " -k " + dir_ +
                        " -c listen_addresses=127.0.0.1 -c max_connections=300"
                        " -c shared_buffers=128MB\""));
}

bool PostgresServer::Stop() {
  return Run(AsPostgres(std::string(kBin) + "pg_ctl -D " + dir_ + "/data -m fast -w stop"));
}

std::string PostgresServer::url() const {
  return "postgresql://postgres@127.0.0.1:" + std::to_string(port_) + "/postgres";
}

std::string PostgresServer::log() const {
  std::ifstream in(dir_ + "/pg.log");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace tickwheel::testing
