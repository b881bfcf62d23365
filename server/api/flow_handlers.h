// SPDX-License-Identifier: Apache-2.0
// The handlers of /v1/flows (docs/flows.md): each parses its request, calls
// the flow service (flow/flow_service.h), which reads and writes the store,
// off the I/O threads (api/store_calls.h): GETs through StoreRead, PUT,
// DELETE, :pause and :resume through StoreBlockingWrite (counted against
// --max-writes as every API write; 503 at the deadline, the outcome
// unknown), and answers the flow as JSON.
#ifndef TICKWHEEL_SERVER_API_FLOW_HANDLERS_H_
#define TICKWHEEL_SERVER_API_FLOW_HANDLERS_H_

#include <boost/asio/awaitable.hpp>
#include <string>
#include <string_view>

#include "api/http_response.h"
#include "api/store_calls.h"
#include "flow/flow_service.h"

namespace tickwheel::server {

// A flow as the API answers it: its settings as stored (if any), the
// limits in force, its backlog and its last minute.
std::string FlowJson(const FlowView& view);

// Thread safety: every handler may run on any number of threads at once.
class FlowHandlers {
 public:
  // `calls` and `service` must outlive this, and every call it started
  // (StoreCalls::Stop waits for them).
  FlowHandlers(StoreCalls& calls, FlowService& service) : calls_(calls), service_(service) {}

  // GET /v1/flows?after=KEY&limit=N
  boost::asio::awaitable<HttpResponse> List(std::string_view query);
  boost::asio::awaitable<HttpResponse> Get(const std::string& key);
  boost::asio::awaitable<HttpResponse> Put(const HttpRequest& req, const std::string& key);
  boost::asio::awaitable<HttpResponse> Delete(const std::string& key);
  boost::asio::awaitable<HttpResponse> SetPaused(const std::string& key, bool paused);

 private:
  StoreCalls& calls_;
  FlowService& service_;
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_API_FLOW_HANDLERS_H_
