#include "serve/serve.h"

#include <spdlog/spdlog.h>
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
  Result<std::unique_ptr<Server>> server = Server::Start(options);
  if (!server.ok()) {
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
  first.get_future().wait();
  (*server)->Drain([&] { return second.load(); });
  spdlog::info("stopped cleanly");
  return 0;
}

}  // namespace tickwheel::server
