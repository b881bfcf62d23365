// SPDX-License-Identifier: Apache-2.0
// Building the API's HTTP answers.
#ifndef TICKWHEEL_SERVER_API_HTTP_RESPONSE_H_
#define TICKWHEEL_SERVER_API_HTTP_RESPONSE_H_

#include <boost/beast/http.hpp>
#include <string>

#include "common/status.h"

namespace tickwheel::server {

using HttpRequest = boost::beast::http::request<boost::beast::http::string_body>;
using HttpResponse = boost::beast::http::response<boost::beast::http::string_body>;

HttpResponse JsonResponse(int status, std::string body);
// HttpStatusOf(status) with ErrorJson(status); a 503 says when to retry.
HttpResponse ErrorResponse(const Status& status);

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_API_HTTP_RESPONSE_H_
