// SPDX-License-Identifier: Apache-2.0
// The export format (docs/operations.md, "The export format"): JSON lines.
//
//   {"kind":"export","format":1,"server_version","store","taken_ms",
//    "states":[...],"counts":{state: n},"timers":N}                first
//   {"kind":"timer", <a timer as GET answers it, header values shown>,
//    "create_digest":"sha256:<hex>"|"legacy"}                       N of them
//   {"kind":"end"}                                                  last
//
// A timer line is the create body (id, fire_at_ms, target, payload, retry)
// plus its state: state, next_attempt_ms, attempts, created_ms, updated_ms,
// last_error, attempt_log, traceparent and tracestate (when it has them),
// and the digest of the create request that made it
// (so a repeated create still answers 200 after an import). After the
// timers, an export of every state has a line per schedule and per flow
// with settings:
//
//   {"kind":"schedule","id":ID,"record":"<base64>","schedule":{<as GET
//    /v1/schedules/{id} answers it, header values shown>}}
//   {"kind":"flow","key":KEY,"settings":{<as GET /v1/flows/{key} shows
//    them>,"updated_ms":n}}
//
// A schedule is imported from its "record" (the stored form, versioned:
// the planner's position comes along exactly); "schedule" is there to be
// read and diffed, and is not read back. A server refuses a kind it does
// not know rather than drop it.
#ifndef TICKWHEEL_SERVER_API_TRANSFER_JSON_H_
#define TICKWHEEL_SERVER_API_TRANSFER_JSON_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "api/timer_request.h"
#include "common/status.h"
#include "flow/flow_settings.h"
#include "store/timer_store.h"
#include "timer/timer_record.h"

namespace tickwheel::server {

inline constexpr int kExportFormat = 1;

struct ExportHeader {
  std::string server_version;
  std::string store;  // "embedded" | "postgres"
  std::int64_t taken_ms = 0;
  unsigned states = kAllStates;
  StateCounts counts{};  // every timer per state in the snapshot
};

// The lines, each ending in '\n'.
std::string ExportHeaderLine(const ExportHeader& header);
std::string ExportTimerLine(const TimerRecord& record);
std::string ExportScheduleLine(const ScheduleRow& row);
std::string ExportFlowLine(const std::string& key, const std::string& stored_settings);
std::string ExportEndLine();

// One line of an import.
struct ImportLine {
  enum class Kind { kHeader, kTimer, kSchedule, kFlow, kEnd };
  Kind kind = Kind::kTimer;
  TimerRecord record;             // kTimer
  ScheduleRow schedule;           // kSchedule: as the stores keep it
  std::string flow_key;           // kFlow
  FlowSettings flow_settings;     // kFlow
  std::int64_t timers = -1;       // kHeader: the timers the export holds (-1: not said)
};

// Parses one line. A timer's create fields are checked as a create's are
// (ids, targets, payload size, retry; against this server's `limits`), but
// its fire time is kept as it was (not moved to now); then its state fields.
// A line without "kind" is a timer. `now_ms` stands for a missing
// created_ms/updated_ms. Errors name the field ("target.url",
// "attempt_log[2].status").
Result<ImportLine> ParseImportLine(std::string_view line, const ApiLimits& limits,
                                   std::int64_t now_ms);

// "a,b" -> bits of StateName()s; kInvalidArgument naming `field`.
Result<unsigned> ParseStateSet(std::string_view text, std::string_view field);

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_API_TRANSFER_JSON_H_
