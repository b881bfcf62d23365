// SPDX-License-Identifier: Apache-2.0
// Client: each call is the AsyncClient's coroutine, run to its end on the
// client's own io_context by the calling thread.
#include <boost/asio/co_spawn.hpp>
#include <exception>

#include "tickwheel/client.h"

namespace tickwheel::client {

namespace asio = boost::asio;

Client::Client(ClientOptions options) : async_(io_.get_executor(), std::move(options)) {}

Client::~Client() = default;

template <typename T>
T Client::Run(asio::awaitable<T> call) {
  std::lock_guard<std::mutex> lock(mu_);
  std::optional<T> result;
  std::exception_ptr error;
  asio::co_spawn(io_, std::move(call), [&](std::exception_ptr e, T value) {
    if (e) {
      error = e;
    } else {
      result.emplace(std::move(value));
    }
  });
  io_.restart();
  io_.run();
  if (error) std::rethrow_exception(error);
  return std::move(*result);
}

json::object Client::Create(CreateTimer timer) { return Run(async_.Create(std::move(timer))); }

json::array Client::CreateBatch(std::vector<CreateTimer> timers) {
  return Run(async_.CreateBatch(std::move(timers)));
}

json::object Client::Get(std::string_view id, bool show_headers) {
  return Run(async_.Get(std::string(id), show_headers));
}

json::object Client::ListPage(std::string_view state, ListOptions options) {
  return Run(async_.ListPage(std::string(state), std::move(options)));
}

std::vector<json::object> Client::ListAll(std::string_view state, ListOptions options) {
  return Run(async_.ListAll(std::string(state), std::move(options)));
}

json::object Client::Reschedule(std::string_view id, std::optional<std::int64_t> delay_ms,
                                std::optional<std::int64_t> fire_at_ms) {
  return Run(async_.Reschedule(std::string(id), delay_ms, fire_at_ms));
}

json::object Client::Cancel(std::string_view id) { return Run(async_.Cancel(std::string(id))); }

json::object Client::Retry(std::string_view id) { return Run(async_.Retry(std::string(id))); }

json::object Client::RetryFailed(DeadLetterFilter filter) {
  return Run(async_.RetryFailed(std::move(filter)));
}

json::object Client::DeleteFailed(DeadLetterFilter filter) {
  return Run(async_.DeleteFailed(std::move(filter)));
}

std::int64_t Client::RetryAllFailed(DeadLetterFilter filter) {
  return Run(async_.RetryAllFailed(std::move(filter)));
}

std::int64_t Client::DeleteAllFailed(DeadLetterFilter filter) {
  return Run(async_.DeleteAllFailed(std::move(filter)));
}

json::object Client::Stats() { return Run(async_.Stats()); }

json::object Client::Whoami() { return Run(async_.Whoami()); }

json::object Client::Health() { return Run(async_.Health()); }

Response Client::Call(std::string_view method, std::string_view target, std::string_view body,
                      RequestHeaders headers) {
  return Run(async_.Call(std::string(method), std::string(target), std::string(body),
                         std::move(headers)));
}

json::value Client::CallJson(std::string_view method, std::string_view target,
                             std::optional<json::value> body,
                             RequestHeaders headers) {
  return Run(async_.CallJson(std::string(method), std::string(target), std::move(body),
                             std::move(headers)));
}

}  // namespace tickwheel::client
