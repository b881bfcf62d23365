// SPDX-License-Identifier: Apache-2.0
// The API's description, docs/openapi.json (OpenAPI 3.1), compiled into the
// binary by cmake/EmbedFiles.cmake and served at GET /v1/openapi.json
// without a token, so that a running server describes its own version.
// It is written by hand once; tests/server/contract checks every answer of
// the API tests against it and tests/openapi lints it.
#ifndef TICKWHEEL_SERVER_API_OPENAPI_H_
#define TICKWHEEL_SERVER_API_OPENAPI_H_

#include <string_view>
#include <vector>

#include "api/http_response.h"

namespace tickwheel::server {

struct EmbeddedDocument {
  std::string_view path;   // relative to docs/: "openapi.json"
  std::string_view bytes;  // the file's content
  std::string_view etag;   // a quoted strong ETag: "\"<16 hex digits of its SHA-256>\""
};

// docs/openapi.json, generated into the build. Static storage.
const std::vector<EmbeddedDocument>& OpenApiDocuments();

// The description as application/json with its ETag, revalidated on each
// use (Cache-Control: no-cache); 304 when If-None-Match names its ETag.
// Thread safety: stateless; call from any thread.
HttpResponse OpenApiResponse(const HttpRequest& req);

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_API_OPENAPI_H_
