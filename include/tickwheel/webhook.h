// SPDX-License-Identifier: Apache-2.0
// Verifying a signed tickwheel delivery in a receiver (Standard Webhooks,
// https://www.standardwebhooks.com): `tickwheel serve --webhook-secret-file`
// signs every attempt with each of its secrets: webhook-id,
// webhook-timestamp and webhook-signature ("v1,<base64 HMAC-SHA256>"
// entries, space-separated, over "{id}.{timestamp}.{body}").
//
// Link with tickwheel::client (find_package(tickwheel)); OpenSSL computes
// the HMAC.
//
//   try {
//     json::value delivery = tickwheel::client::VerifyWebhook({secret}, headers, body);
//   } catch (const tickwheel::client::WebhookVerificationError& e) {
//     return 401;  // e.reason(): kMissing, kTimestamp, kSignature
//   }
#ifndef TICKWHEEL_WEBHOOK_H_
#define TICKWHEEL_WEBHOOK_H_

#include <boost/json/value.hpp>
#include <chrono>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tickwheel::client {

// The delivery is not to be trusted.
class WebhookVerificationError : public std::runtime_error {
 public:
  enum class Reason {
    kMissing,    // a webhook-* header is missing or empty
    kTimestamp,  // stale, from the future, or not Unix seconds: a replay?
    kSignature,  // no v1 entry matches any secret
  };
  WebhookVerificationError(Reason reason, const std::string& message)
      : std::runtime_error(message), reason_(reason) {}
  Reason reason() const { return reason_; }

 private:
  Reason reason_;
};

inline constexpr std::chrono::seconds kDefaultWebhookTolerance{300};

// Checks a delivery's webhook-id, webhook-timestamp and webhook-signature
// (header names matched in any case) against `secrets` ("whsec_<base64>",
// or the base64 alone; several while one is rotated: any may have signed),
// and returns its body parsed. Throws WebhookVerificationError if a header
// is missing, the timestamp is more than `tolerance` from `now` (default:
// the system clock) either way, no signature matches, or the verified body
// is not JSON (kSignature); std::invalid_argument for no secret or one
// that is not base64. Pass the body exactly as received: a re-serialized
// JSON body does not verify.
boost::json::value VerifyWebhook(
    const std::vector<std::string>& secrets, const std::map<std::string, std::string>& headers,
    std::string_view body, std::chrono::seconds tolerance = kDefaultWebhookTolerance,
    std::optional<std::chrono::system_clock::time_point> now = std::nullopt);

}  // namespace tickwheel::client

#endif  // TICKWHEEL_WEBHOOK_H_
