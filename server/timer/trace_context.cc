// SPDX-License-Identifier: Apache-2.0
#include "timer/trace_context.h"

#include <cstdio>
#include <random>

namespace tickwheel::server {
namespace {

constexpr std::size_t kVersion00Length = 55;  // "00-" 32 "-" 16 "-" 2

bool IsLowerHex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

bool AllLowerHex(std::string_view s) {
  for (char c : s) {
    if (!IsLowerHex(c)) return false;
  }
  return true;
}

bool AllZeros(std::string_view s) { return s.find_first_not_of('0') == std::string_view::npos; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

Status Bad(std::string_view prefix, std::string_view field, const std::string& message) {
  return Status::Invalid("invalid_trace_context", std::string(field) + " " + message,
                         std::string(prefix) + std::string(field));
}

// `value` in version 00 form with only the sampled flag, or the error.
Result<std::string> ParseTraceparent(std::string_view value, std::string_view prefix) {
  const std::string_view form =
      "must be W3C Trace Context's \"00-<32 hex trace-id>-<16 hex parent-id>-<2 hex flags>\" "
      "in lower case";
  auto bad = [&](const std::string& what) { return Bad(prefix, "traceparent", what + "; it " + std::string(form)); };
  value = Trim(value);
  if (value.size() < 2 || !AllLowerHex(value.substr(0, 2))) return bad("has no version");
  const std::string_view version = value.substr(0, 2);
  if (version == "ff") return bad("has version ff, which is invalid");
  if (version == "00" ? value.size() != kVersion00Length
                      : value.size() < kVersion00Length ||
                            (value.size() > kVersion00Length && value[kVersion00Length] != '-')) {
    return bad("is " + std::to_string(value.size()) + " characters long (version 00: 55)");
  }
  if (value[2] != '-' || value[35] != '-' || value[52] != '-') return bad("is not split by dashes");
  const std::string_view trace_id = value.substr(3, 32);
  const std::string_view parent_id = value.substr(36, 16);
  const std::string_view flags = value.substr(53, 2);
  if (!AllLowerHex(trace_id) || !AllLowerHex(parent_id) || !AllLowerHex(flags)) {
    return bad("has a character that is not a lower-case hex digit");
  }
  if (AllZeros(trace_id)) return bad("has an all-zero trace-id, which is invalid");
  if (AllZeros(parent_id)) return bad("has an all-zero parent-id, which is invalid");
  const bool sampled = (flags[1] - (flags[1] <= '9' ? '0' : 'a' - 10)) & 1;
  std::string out = "00-";
  out += trace_id;
  out += '-';
  out += parent_id;
  out += sampled ? "-01" : "-00";
  return out;
}

Status CheckTracestate(std::string_view value, std::string_view prefix) {
  if (value.size() > kMaxTracestateBytes) {
    return Bad(prefix, "tracestate",
               "is " + std::to_string(value.size()) + " bytes long; at most " +
                   std::to_string(kMaxTracestateBytes) + " are kept");
  }
  std::size_t members = 0;
  while (!value.empty()) {
    const std::size_t comma = value.find(',');
    const std::string_view member = Trim(value.substr(0, comma));
    value = comma == std::string_view::npos ? std::string_view() : value.substr(comma + 1);
    if (member.empty()) continue;  // empty list members are allowed
    for (char c : member) {
      if (c < 0x20 || c > 0x7e) {
        return Bad(prefix, "tracestate", "has a character outside printable ASCII");
      }
    }
    const std::size_t eq = member.find('=');
    if (eq == 0 || eq == std::string_view::npos || eq + 1 == member.size()) {
      return Bad(prefix, "tracestate",
                 "has a list member that is not \"key=value\": \"" + std::string(member) + "\"");
    }
    if (++members > kMaxTracestateMembers) {
      return Bad(prefix, "tracestate",
                 "has more than " + std::to_string(kMaxTracestateMembers) + " list members");
    }
  }
  return Status::Ok();
}

}  // namespace

Result<TraceContext> ParseTraceHeaders(const std::vector<std::string_view>& traceparents,
                                       const std::vector<std::string_view>& tracestates,
                                       std::string_view prefix) {
  TraceContext out;
  if (traceparents.size() > 1) {
    return Bad(prefix, "traceparent",
               "was sent " + std::to_string(traceparents.size()) + " times; send one");
  }
  if (traceparents.empty()) {
    if (!tracestates.empty()) {
      return Bad(prefix, "tracestate",
                 "was sent without a traceparent; it belongs to the traceparent's trace");
    }
    return out;
  }
  Result<std::string> parent = ParseTraceparent(traceparents[0], prefix);
  if (!parent.ok()) return parent.status();
  out.traceparent = std::move(*parent);
  for (std::string_view line : tracestates) {
    line = Trim(line);
    if (line.empty()) continue;
    if (!out.tracestate.empty()) out.tracestate += ',';
    out.tracestate += line;
  }
  if (Status s = CheckTracestate(out.tracestate, prefix); !s.ok()) return s;
  return out;
}

std::string ChildTraceparent(std::string_view stored, std::uint64_t span_id) {
  char span[17];
  std::snprintf(span, sizeof span, "%016llx", static_cast<unsigned long long>(span_id));
  std::string out(stored);
  out.replace(36, 16, span, 16);
  return out;
}

std::vector<std::pair<std::string, std::string>> AttemptTraceHeaders(const TraceContext& trace,
                                                                      std::uint64_t span_id) {
  std::vector<std::pair<std::string, std::string>> out;
  if (trace.empty()) return out;
  out.emplace_back("traceparent", ChildTraceparent(trace.traceparent, span_id));
  if (!trace.tracestate.empty()) out.emplace_back("tracestate", trace.tracestate);
  return out;
}

std::string_view TraceIdOf(std::string_view stored) { return stored.substr(3, 32); }

std::uint64_t NewSpanId() {
  thread_local std::mt19937_64 generator{[] {
    std::random_device device;
    return (std::uint64_t{device()} << 32) ^ device();
  }()};
  std::uint64_t id = 0;
  while (id == 0) id = generator();
  return id;
}

}  // namespace tickwheel::server
