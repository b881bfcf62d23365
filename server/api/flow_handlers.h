// SPDX-License-Identifier: Apache-2.0
// The handlers of /v1/flows (docs/flows.md): each parses its request, calls
// the flow service (flow/flow_service.h) off the I/O threads, and answers
// the flow as JSON.
#ifndef TICKWHEEL_SERVER_API_FLOW_HANDLERS_H_
#define TICKWHEEL_SERVER_API_FLOW_HANDLERS_H_

#include <boost/asio/awaitable.hpp>
#include <string>
#include <string_view>

#include "api/blocking_call.h"
#include "api/http_response.h"
#include "flow/flow_service.h"

namespace tickwheel::server {

// A flow as the API answers it: its settings as stored (if any), the
// limits in force, its backlog and its last minute.
std::string FlowJson(const FlowView& view);

// Thread safety: every handler may run on any number of threads at once.
class FlowHandlers {
 public:
  // `service` must outlive this.
  explicit FlowHandlers(FlowService& service) : service_(service) {}

  // GET /v1/flows?after=KEY&limit=N
  boost::asio::awaitable<HttpResponse> List(std::string_view query);
  boost::asio::awaitable<HttpResponse> Get(const std::string& key);
  boost::asio::awaitable<HttpResponse> Put(const HttpRequest& req, const std::string& key);
  boost::asio::awaitable<HttpResponse> Delete(const std::string& key);
  boost::asio::awaitable<HttpResponse> SetPaused(const std::string& key, bool paused);

 private:
  FlowService& service_;
  BlockingCalls calls_;
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_API_FLOW_HANDLERS_H_
