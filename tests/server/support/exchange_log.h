// SPDX-License-Identifier: Apache-2.0
// The API tests' exchanges, recorded for the contract test
// (tests/server/contract/check_exchanges.py checks each against
// docs/openapi.json).
#ifndef TICKWHEEL_TESTS_SERVER_SUPPORT_EXCHANGE_LOG_H_
#define TICKWHEEL_TESTS_SERVER_SUPPORT_EXCHANGE_LOG_H_

#include <map>
#include <string>

namespace tickwheel::testing {

// The variable naming the directory the exchanges are written to.
inline constexpr const char* kExchangeLogVariable = "TICKWHEEL_EXCHANGE_LOG_DIR";

// When TICKWHEEL_EXCHANGE_LOG_DIR is set, appends every exchange of every
// server::BlockingHttpClient of this process to DIR/<program>-<pid>.jsonl,
// one JSON object a line: method, target, bearer (a token was sent: never
// its value), request_body, request_headers (those the test added, as
// [name, value] pairs), status, headers (of the answer), body (or
// request_body_base64/body_base64 for bytes that are not UTF-8). Returns
// whether it records. Idempotent; thread-safe once installed.
bool RecordExchangesIfAsked();

// Appends one delivery a receiver got (kind "delivery": headers, body) to
// the same log, for the description's `webhooks`; nothing unless recording.
void RecordDelivery(const std::map<std::string, std::string>& headers, const std::string& body);

}  // namespace tickwheel::testing

#endif  // TICKWHEEL_TESTS_SERVER_SUPPORT_EXCHANGE_LOG_H_
