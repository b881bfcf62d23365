// SPDX-License-Identifier: Apache-2.0
#include "api/trace_headers.h"

#include <string_view>
#include <vector>

namespace tickwheel::server {

Result<TraceContext> RequestTrace(const HttpRequest& req) {
  auto values = [&](std::string_view name) {
    std::vector<std::string_view> out;
    auto [begin, end] = req.equal_range(name);
    for (auto it = begin; it != end; ++it) out.emplace_back(it->value().data(), it->value().size());
    return out;
  };
  return ParseTraceHeaders(values("traceparent"), values("tracestate"));
}

}  // namespace tickwheel::server
