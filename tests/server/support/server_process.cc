// SPDX-License-Identifier: Apache-2.0
#include "support/server_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "cli/blocking_http_client.h"

namespace tickwheel::testing {

int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

TempDir::TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "tickwheel-test-XXXXXX").string();
  path_ = mkdtemp(tmpl.data());
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

ServerProcess::ServerProcess(std::string binary, std::string data_dir,
                             std::vector<std::string> extra_args)
    : binary_(std::move(binary)),
      data_dir_(std::move(data_dir)),
      extra_args_(std::move(extra_args)),
      log_path_(data_dir_ + ".log") {}

ServerProcess::~ServerProcess() {
  if (pid_ > 0) Kill();
}

bool ServerProcess::Start(int port) {
  port_ = ephemeral_port_ ? 0 : port != 0 ? port : FreePort();
  std::vector<std::string> args = {binary_, "serve", "--listen",
                                   listen_host_ + ":" + std::to_string(port_),
                                   "--data-dir", data_dir_};
  args.insert(args.end(), extra_args_.begin(), extra_args_.end());
  pid_ = fork();
  if (pid_ == 0) {
    // Do not outlive the test (or benchmark) if it dies.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (max_open_files_ > 0) {
      rlimit limit{static_cast<rlim_t>(max_open_files_), static_cast<rlim_t>(max_open_files_)};
      setrlimit(RLIMIT_NOFILE, &limit);
    }
    int fd = open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    // Nothing else of the parent's: its receivers' listening sockets and
    // connections (asio opens them without close-on-exec) would otherwise
    // stay open in the server, count as its descriptors, and keep a
    // connection the receiver closed from closing.
    close_range(3, ~0U, 0);
    for (std::string& var : env_) putenv(var.data());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    std::perror("execv");
    _exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      std::fprintf(stderr, "tickwheel serve exited at start:\n%s\n", log().c_str());
      return false;
    }
    if (port_ == 0) {
      // The port the system picked, from "listening on http://HOST:PORT".
      const std::string text = log();
      const std::size_t at = text.find("listening on http");
      const std::size_t colon = at == std::string::npos ? at : text.find(':', text.find("://", at) + 3);
      if (colon == std::string::npos) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        continue;
      }
      port_ = std::atoi(text.c_str() + colon + 1);
    }
    server::BlockingHttpClientOptions options;
    options.timeout = std::chrono::seconds(2);
    options.ca_file = ca_file_;
    server::BlockingHttpClient client(url(), options);
    if (client.Call("GET", "/healthz").status == 200) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::fprintf(stderr, "tickwheel serve did not answer /healthz:\n%s\n", log().c_str());
  Kill();
  return false;
}

bool ServerProcess::tls() const {
  return std::find(extra_args_.begin(), extra_args_.end(), "--tls-cert") != extra_args_.end();
}

void ServerProcess::LimitAsanQuarantine() {
  const char* options = std::getenv("ASAN_OPTIONS");
  env_.push_back(std::string("ASAN_OPTIONS=") + (options ? options + std::string(":") : "") +
                 "quarantine_size_mb=8");
}

void ServerProcess::Kill() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
}

int ServerProcess::Terminate(int timeout_seconds) {
  if (pid_ <= 0) return -1;
  kill(pid_, SIGTERM);
  return Wait(timeout_seconds);
}

void ServerProcess::Signal(int signal) {
  if (pid_ > 0) kill(pid_, signal);
}

int ServerProcess::Wait(int timeout_seconds) {
  if (pid_ <= 0) return -1;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  Kill();
  return -1;
}

std::string ServerProcess::log() const {
  std::ifstream in(log_path_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace tickwheel::testing
