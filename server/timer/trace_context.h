// SPDX-License-Identifier: Apache-2.0
// W3C Trace Context (https://www.w3.org/TR/trace-context/) carried by a
// timer: the `traceparent` and `tracestate` its create was sent with are
// stored with it, and every delivery attempt is sent as a new span of that
// trace whose parent is the stored span (docs/operations.md, "A timer's
// delivery in a trace").
#ifndef TICKWHEEL_SERVER_TIMER_TRACE_CONTEXT_H_
#define TICKWHEEL_SERVER_TIMER_TRACE_CONTEXT_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace tickwheel::server {

// The longest tracestate kept: the spec's 32 list members, and the 512
// characters it asks every vendor to propagate at least.
inline constexpr std::size_t kMaxTracestateBytes = 512;
inline constexpr std::size_t kMaxTracestateMembers = 32;

// A trace context as a timer stores it: both empty when its create had
// none. `traceparent` is in version 00 form, "00-<32 hex trace-id>-<16 hex
// parent-id>-<2 hex flags>" with only the sampled flag kept (the others
// are undefined in version 00, which says to send them as zero);
// `tracestate` is as received (several header lines joined with ",").
struct TraceContext {
  std::string traceparent;
  std::string tracestate;
  bool empty() const { return traceparent.empty(); }
  friend bool operator==(const TraceContext&, const TraceContext&) = default;
};

// The trace context of a request from the values of its `traceparent` and
// `tracestate` header lines (each possibly absent or repeated). None: an
// empty TraceContext. kInvalidArgument "invalid_trace_context", its field
// "traceparent" or "tracestate" and a message saying what is wrong, for:
//   - a traceparent that is not version 00's form (lower-case hex, three
//     dashes, 55 characters), or of version ff, or whose trace-id or
//     parent-id is all zeros; a later version is read as the spec says
//     (its first 55 characters as version 00, the next one a dash) and
//     stored as version 00;
//   - more than one traceparent;
//   - a tracestate without a traceparent, over kMaxTracestateBytes or
//     kMaxTracestateMembers, with characters outside printable ASCII, or a
//     list member without "key=value".
// `prefix` goes before the field's name ("" for a request's headers,
// "trace." in an import line).
Result<TraceContext> ParseTraceHeaders(const std::vector<std::string_view>& traceparents,
                                       const std::vector<std::string_view>& tracestates,
                                       std::string_view prefix = "");

// The traceparent an attempt is sent with: the stored trace-id and flags,
// `span_id` as its parent-id (the attempt's own span, whose parent is the
// stored one). REQUIRES: `stored` is a TraceContext::traceparent;
// span_id != 0.
std::string ChildTraceparent(std::string_view stored, std::uint64_t span_id);

// The headers an attempt of a timer with `trace` is sent with:
// traceparent ChildTraceparent(trace.traceparent, span_id), and tracestate
// unchanged when there is one; none for an empty trace. REQUIRES:
// span_id != 0.
std::vector<std::pair<std::string, std::string>> AttemptTraceHeaders(const TraceContext& trace,
                                                                      std::uint64_t span_id);

// The trace-id of a stored traceparent (its 32 hex digits).
std::string_view TraceIdOf(std::string_view stored);

// A fresh span id: 64 random bits, never 0 (an invalid id in the spec).
// Thread-safe (a generator per thread, seeded from std::random_device).
std::uint64_t NewSpanId();

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_TIMER_TRACE_CONTEXT_H_
