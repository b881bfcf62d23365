// SPDX-License-Identifier: Apache-2.0
#include "api/openapi.h"

namespace tickwheel::server {

namespace http = boost::beast::http;

HttpResponse OpenApiResponse(const HttpRequest& req) {
  const EmbeddedDocument& doc = OpenApiDocuments().front();
  HttpResponse res;
  res.set(http::field::etag, doc.etag);
  res.set(http::field::cache_control, "no-cache");
  const std::string_view asked = req[http::field::if_none_match];
  if (!asked.empty() && (asked == doc.etag || asked == "*")) {
    res.result(http::status::not_modified);
    return res;
  }
  res.result(http::status::ok);
  res.set(http::field::content_type, "application/json");
  res.body() = std::string(doc.bytes);
  return res;
}

}  // namespace tickwheel::server
