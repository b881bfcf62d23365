// SPDX-License-Identifier: Apache-2.0
#include "client/webhook_mac.h"

#include <openssl/core_names.h>
#include <openssl/params.h>

namespace tickwheel::client::internal {

namespace {

EVP_MAC* HmacAlgorithm() {
  static EVP_MAC* const kHmac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  return kHmac;
}

}  // namespace

EVP_MAC_CTX* NewWebhookMac(std::string_view key) {
  if (HmacAlgorithm() == nullptr) return nullptr;
  EVP_MAC_CTX* ctx = EVP_MAC_CTX_new(HmacAlgorithm());
  char digest[] = "SHA256";
  OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                         OSSL_PARAM_construct_end()};
  if (ctx == nullptr || EVP_MAC_init(ctx, reinterpret_cast<const unsigned char*>(key.data()),
                                     key.size(), params) != 1) {
    EVP_MAC_CTX_free(ctx);
    return nullptr;
  }
  return ctx;
}

void AppendWebhookSignature(EVP_MAC_CTX* keyed, std::string_view id, std::string_view timestamp,
                            std::string_view body, std::string& out) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  std::size_t length = 0;
  EVP_MAC_init(keyed, nullptr, 0, nullptr);  // back to the keyed state
  auto update = [keyed](std::string_view part) {
    EVP_MAC_update(keyed, reinterpret_cast<const unsigned char*>(part.data()), part.size());
  };
  update(id);
  update(".");
  update(timestamp);
  update(".");
  update(body);
  EVP_MAC_final(keyed, mac, &length, sizeof mac);
  const std::size_t at = out.size();
  out.resize(at + 4 * ((length + 2) / 3) + 1);
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data() + at), mac,
                                static_cast<int>(length));
  out.resize(at + static_cast<std::size_t>(n));
}

}  // namespace tickwheel::client::internal
