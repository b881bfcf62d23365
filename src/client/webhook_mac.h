// SPDX-License-Identifier: Apache-2.0
// The Standard Webhooks signature (HMAC-SHA256 over "{id}.{timestamp}.
// {body}", base64), computed once for both sides: the server's signer
// (server/delivery/webhook_signer.cc) and the client's VerifyWebhook
// (webhook.cc). Not installed.
#ifndef TICKWHEEL_SRC_CLIENT_WEBHOOK_MAC_H_
#define TICKWHEEL_SRC_CLIENT_WEBHOOK_MAC_H_

#include <openssl/evp.h>

#include <string>
#include <string_view>

namespace tickwheel::client::internal {

// A new HMAC-SHA256 context keyed with `key` (free it with
// EVP_MAC_CTX_free); nullptr if OpenSSL cannot make one.
EVP_MAC_CTX* NewWebhookMac(std::string_view key);

// Appends to `out` the base64 signature of "{id}.{timestamp}.{body}" made
// with `keyed` (a context of NewWebhookMac, or a copy of one: it is reset
// to its key first, so one context signs again and again).
void AppendWebhookSignature(EVP_MAC_CTX* keyed, std::string_view id, std::string_view timestamp,
                            std::string_view body, std::string& out);

}  // namespace tickwheel::client::internal

#endif  // TICKWHEEL_SRC_CLIENT_WEBHOOK_MAC_H_
