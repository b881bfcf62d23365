// SPDX-License-Identifier: Apache-2.0
#include "serve/serve.h"

#include <spdlog/spdlog.h>
#include <pthread.h>
#include <sys/resource.h>

#include <atomic>
#include <boost/asio/signal_set.hpp>
#include <csignal>
#include <future>

#include "serve/server.h"

namespace tickwheel::server {
namespace {

// Many client and webhook connections: raise the open-files limit to the
// hard limit.
void RaiseFileLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

}  // namespace

int RunServe(const ServeOptions& options) {
  spdlog::set_level(spdlog::level::from_str(options.log_level));
  RaiseFileLimit();
  // SIGTERM and SIGINT are held back until the handler below is in place:
  // the port is bound early in Start (before the store), so a client may be
  // answered, and send a SIGTERM, before Start returns. The threads Start
  // makes inherit the block; this thread takes the signals once unblocked.
  sigset_t stop_signals;
  sigset_t previous;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, &previous);
  Result<std::unique_ptr<Server>> server = Server::Start(options);
  if (!server.ok()) {
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    spdlog::error("{}", server.status().message());
    return 1;
  }
  // The first SIGTERM (or SIGINT) drains; a second one cuts the drain short.
  boost::asio::signal_set signals((*server)->io_context(), SIGTERM, SIGINT);
  std::promise<void> first;
  std::atomic<bool> second{false};
  int signals_seen = 0;  // on the io_context's threads, one signal at a time
  std::function<void(const boost::system::error_code&, int)> on_signal =
      [&](const boost::system::error_code& ec, int sig) {
        if (ec) return;
        if (++signals_seen == 1) {
          spdlog::info("signal {}: draining (a second signal stops at once)", sig);
          first.set_value();
        } else {
          spdlog::warn("signal {} again: stopping without waiting for attempts in flight", sig);
          second.store(true);
        }
        signals.async_wait(on_signal);
      };
  signals.async_wait(on_signal);
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);  // one that came meanwhile arrives now
  first.get_future().wait();
  (*server)->Drain([&] { return second.load(); });
  spdlog::info("stopped cleanly");
  return 0;
}

}  // namespace tickwheel::server
