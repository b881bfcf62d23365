// SPDX-License-Identifier: Apache-2.0
// WebhookSigner: signs deliveries as the Standard Webhooks specification
// says (https://www.standardwebhooks.com), so receivers verify them with its
// libraries: HMAC-SHA256 over "{webhook-id}.{webhook-timestamp}.{body}",
// one "v1,<base64>" per secret, space-separated, in `webhook-signature`.
#ifndef TICKWHEEL_SERVER_DELIVERY_WEBHOOK_SIGNER_H_
#define TICKWHEEL_SERVER_DELIVERY_WEBHOOK_SIGNER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace tickwheel::server {

// Thread safety: immutable after it is made; Sign from any thread.
// Cost: one HMAC-SHA256 over the body per secret, from keyed states made
// once per thread (OpenSSL's one-shot HMAC looks its algorithm up on every
// call, and copying a shared state makes threads contend: 2.4x slower with
// two threads signing).
//
//   Result<WebhookSigner> signer = WebhookSigner::FromFile("/etc/tickwheel/secrets");
//   request.set("webhook-signature", signer->Sign(id, unix_seconds, body));
class WebhookSigner {
 public:
  // Secrets in the Standard Webhooks form "whsec_<base64 of 24..64 key
  // bytes>", one a line; blank lines and lines starting with '#' are
  // skipped. Every secret signs (several while one is rotated out). A bad
  // line is kInvalidArgument "bad_flag" naming the file and line, never
  // the secret.
  static Result<WebhookSigner> FromFile(const std::string& path);
  static Result<WebhookSigner> FromLines(const std::vector<std::string>& lines,
                                         const std::string& source);

  // The value of the webhook-signature header.
  std::string Sign(std::string_view id, std::int64_t unix_seconds, std::string_view body) const;
  std::size_t secrets() const { return keyed_.size(); }

 private:
  struct Keyed;  // an HMAC-SHA256 context with its key set (OpenSSL)
  struct Free {
    void operator()(Keyed* k) const;
  };
  std::vector<std::shared_ptr<Keyed>> keyed_;
  std::uint64_t id_ = 0;  // tells each thread's copies of the states apart
};

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_DELIVERY_WEBHOOK_SIGNER_H_
