// SPDX-License-Identifier: Apache-2.0
#include "api/http_response.h"

#include "api/timer_json.h"

namespace tickwheel::server {

namespace http = boost::beast::http;

HttpResponse JsonResponse(int status, std::string body) {
  HttpResponse res;
  res.result(static_cast<unsigned>(status));
  res.set(http::field::content_type, "application/json");
  res.body() = std::move(body);
  return res;
}

HttpResponse ErrorResponse(const Status& status) {
  HttpResponse res = JsonResponse(HttpStatusOf(status), ErrorJson(status));
  if (res.result_int() == 503) res.set(http::field::retry_after, "1");
  return res;
}

}  // namespace tickwheel::server
