// SPDX-License-Identifier: Apache-2.0
// PostgresServer: a throw-away PostgreSQL 15 for tests, in a temporary
// directory on a free port (initdb as the postgres user when the tests run
// as root, since initdb refuses root), stopped and removed at the end.
#ifndef TICKWHEEL_TESTS_SERVER_SUPPORT_POSTGRES_SERVER_H_
#define TICKWHEEL_TESTS_SERVER_SUPPORT_POSTGRES_SERVER_H_

#include <string>

namespace tickwheel::testing {

class PostgresServer {
 public:
  PostgresServer();   // initdb and start; check ok()
  ~PostgresServer();  // stop and remove

  bool ok() const { return ok_; }
  // postgresql://postgres@127.0.0.1:PORT/postgres
  std::string url() const;
  int port() const { return port_; }
  // Its data directory (postmaster.pid is in it).
  std::string data_dir() const { return dir_ + "/data"; }

  // pg_ctl stop -m fast / start again on the same directory and port.
  bool Stop();
  bool Start();
  std::string log() const;

 private:
  bool Run(const std::string& command) const;

  std::string dir_;
  int port_ = 0;
  bool ok_ = false;
};

}  // namespace tickwheel::testing

#endif  // TICKWHEEL_TESTS_SERVER_SUPPORT_POSTGRES_SERVER_H_
