// SPDX-License-Identifier: Apache-2.0
#include "cli/blocking_http_client.h"

#include <atomic>

namespace tickwheel::server {

namespace {
std::atomic<HttpExchangeObserver> exchange_observer{nullptr};

client::ClientOptions Options(std::string server, BlockingHttpClientOptions options) {
  client::ClientOptions o;
  o.server = std::move(server);
  o.token = std::move(options.bearer_token);  // "" is none (not $TICKWHEEL_TOKEN)
  o.ca_file = std::move(options.ca_file);
  o.timeout = options.timeout;
  o.retries = 0;
  return o;
}
}  // namespace

void SetHttpExchangeObserver(HttpExchangeObserver observer) { exchange_observer.store(observer); }

BlockingHttpClient::BlockingHttpClient(std::string server, std::chrono::milliseconds timeout)
    : BlockingHttpClient(std::move(server), BlockingHttpClientOptions{timeout}) {}

BlockingHttpClient::BlockingHttpClient(std::string server, BlockingHttpClientOptions options)
    : bearer_token_(!options.bearer_token.empty()),
      client_(Options(std::move(server), std::move(options))) {}

BlockingHttpClient::~BlockingHttpClient() = default;

HttpCallResult BlockingHttpClient::Call(
    std::string_view method, std::string_view target, std::string_view body,
    const std::vector<std::pair<std::string, std::string>>& headers) {
  client::RequestHeaders extra(headers.begin(), headers.end());
  HttpCallResult result = client_.Call(method, target, body, std::move(extra));
  if (result.status != 0) {
    if (HttpExchangeObserver observe = exchange_observer.load()) {
      observe({method, target, body, bearer_token_, result, headers});
    }
  }
  return result;
}

}  // namespace tickwheel::server
