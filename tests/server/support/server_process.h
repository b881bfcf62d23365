// SPDX-License-Identifier: Apache-2.0
// Runs the real `tickwheel serve` (build/tickwheel) on a free loopback
// port with its own data directory, for integration tests and benchmarks.
#ifndef TICKWHEEL_TESTS_SERVER_SUPPORT_SERVER_PROCESS_H_
#define TICKWHEEL_TESTS_SERVER_SUPPORT_SERVER_PROCESS_H_

#include <sys/types.h>

#include <string>
#include <vector>

namespace tickwheel::testing {

// A free TCP port on 127.0.0.1 (bound and released; good enough on a test
// machine).
int FreePort();

// A fresh temporary directory, removed by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

class ServerProcess {
 public:
  // `binary`: path to the tickwheel executable. `extra_args` are appended
  // to `serve --listen 127.0.0.1:PORT --data-dir DIR`.
  ServerProcess(std::string binary, std::string data_dir,
                std::vector<std::string> extra_args = {});
  ~ServerProcess();  // SIGKILLs the server if still running

  // Starts it and waits (up to 60 s) until /healthz answers; false if it
  // exited or never answered (its log is printed).
  bool Start(int port = 0);
  // SIGKILL, and reap.
  void Kill();
  // SIGTERM; returns the exit status (-1 if it did not exit in time).
  int Terminate(int timeout_seconds = 60);
  // Sends `signal` and returns at once.
  void Signal(int signal);
  // Waits for it to exit; its exit status, or -1 if it did not in time (it
  // is then killed).
  int Wait(int timeout_seconds = 60);
  // Runs the next Start with at most `n` open files (soft and hard limit).
  void set_max_open_files(long n) { max_open_files_ = n; }
  // Runs the next Start with these environment variables ("NAME=value")
  // added (LD_PRELOAD=libfaketime...: a node whose clock is off).
  void set_env(std::vector<std::string> env) { env_ = std::move(env); }
  // For a test that bounds the server's peak RSS: runs the next Start with
  // ASan's quarantine at 8 MB (the test's ASAN_OPTIONS kept; nothing changes
  // outside ASan). Freed memory waits in the quarantine (256 MB by default)
  // before reuse, so a bounded read's chunks, each freed, still raised the
  // peak: +35 MB over BoundedReadsTest's dry runs in one CI run. With a small
  // one the peak is what the server holds, as in Release.
  void LimitAsanQuarantine();
  bool running() const { return pid_ > 0; }

  // With --tls-cert among the arguments, the health check speaks HTTPS and
  // trusts this CA.
  void set_ca_file(std::string ca_file) { ca_file_ = std::move(ca_file); }
  // The address to listen on (127.0.0.1 by default; the health check
  // always goes to 127.0.0.1).
  void set_listen_host(std::string host) { listen_host_ = std::move(host); }
  // Listens on port 0 (--listen HOST:0, a port the system picks, read from
  // the server's log once it listens): several servers with the same
  // --listen string.
  void set_ephemeral_port() { ephemeral_port_ = true; }
  bool tls() const;

  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  // address() with its scheme: http:// or https://.
  std::string url() const { return (tls() ? "https://" : "http://") + address(); }
  pid_t pid() const { return pid_; }
  std::string log() const;  // what the server printed

 private:
  std::string binary_;
  std::string data_dir_;
  std::vector<std::string> extra_args_;
  std::string log_path_;
  std::string ca_file_;
  std::string listen_host_ = "127.0.0.1";
  int port_ = 0;
  pid_t pid_ = -1;
  long max_open_files_ = 0;
  std::vector<std::string> env_;
  bool ephemeral_port_ = false;
};

}  // namespace tickwheel::testing

#endif  // TICKWHEEL_TESTS_SERVER_SUPPORT_SERVER_PROCESS_H_
