// SPDX-License-Identifier: Apache-2.0
// The W3C trace context a create request carries in its headers.
#ifndef TICKWHEEL_SERVER_API_TRACE_HEADERS_H_
#define TICKWHEEL_SERVER_API_TRACE_HEADERS_H_

#include "api/http_response.h"
#include "common/status.h"
#include "timer/trace_context.h"

namespace tickwheel::server {

// The request's `traceparent` and `tracestate` headers, as
// ParseTraceHeaders reads them (empty when it has none; a 400
// "invalid_trace_context" naming the header when they are malformed).
Result<TraceContext> RequestTrace(const HttpRequest& req);

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_API_TRACE_HEADERS_H_
