// SPDX-License-Identifier: Apache-2.0
// The embedded store's binary form of a TimerRecord: compact and versioned.
#ifndef TICKWHEEL_SERVER_STORE_RECORD_CODEC_H_
#define TICKWHEEL_SERVER_STORE_RECORD_CODEC_H_

#include <string>
#include <string_view>

#include "common/status.h"
#include "timer/timer_record.h"

namespace tickwheel::server {

// The newest format EncodeRecord writes; backups name it, so that a server
// can tell a copy it cannot read.
inline constexpr int kRecordFormat = 4;

// Format 4 for a record with a trace context (format 3 and the trace
// context), format 3 for one without (format 2 and the timer's flow, and
// each attempt's throttled_ms): a server of the version before reads every
// timer that has no trace context. Formats 1 (before digests were stable
// and attempts were logged) and 2 (before flows) are still read: format 1
// records come back with DigestKind::kLegacy, and both with the flow
// DefaultFlowKey(target) and no throttled_ms; they are written in format 3
// at their next change. Nothing before format 4 has a trace context.
std::string EncodeRecord(const TimerRecord& record);

// kCorrupt, saying what, for bytes that are not an encoded record: damage,
// or a format newer than this server knows (then: upgrade the server).
Result<TimerRecord> DecodeRecord(std::string_view id, std::string_view bytes);

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_STORE_RECORD_CODEC_H_
