// SPDX-License-Identifier: Apache-2.0
// Verifies a delivery as a Standard Webhooks receiver does, written here
// from the specification with OpenSSL's HMAC and base64 (not the server's
// code): the key is the base64 after "whsec_"; the signed content is
// "{webhook-id}.{webhook-timestamp}.{body}"; webhook-signature holds
// space-separated "v1,<base64 HMAC-SHA256>" entries, one of which must
// match.
#ifndef TICKWHEEL_TESTS_SERVER_SUPPORT_STANDARD_WEBHOOKS_H_
#define TICKWHEEL_TESTS_SERVER_SUPPORT_STANDARD_WEBHOOKS_H_

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>

#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace tickwheel::testing {

// The signature a secret makes over content, "v1,<base64>".
inline std::string StandardWebhooksSignature(const std::string& secret, const std::string& content) {
  const std::string b64 = secret.substr(6);  // after whsec_
  std::vector<unsigned char> key(b64.size());
  int n = EVP_DecodeBlock(key.data(), reinterpret_cast<const unsigned char*>(b64.data()),
                          static_cast<int>(b64.size()));
  if (n < 0) return "";
  n -= static_cast<int>(std::count(b64.end() - std::min<std::size_t>(2, b64.size()), b64.end(), '='));
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int mac_len = 0;
  HMAC(EVP_sha256(), key.data(), n, reinterpret_cast<const unsigned char*>(content.data()),
       content.size(), mac, &mac_len);
  unsigned char out[4 * EVP_MAX_MD_SIZE];
  const int len = EVP_EncodeBlock(out, mac, static_cast<int>(mac_len));
  return "v1," + std::string(reinterpret_cast<char*>(out), static_cast<std::size_t>(len));
}

// True if `headers` (names in lower case) carry a signature of `body` by
// `secret`; else false with `why`.
inline bool VerifyStandardWebhook(const std::string& secret,
                                  const std::map<std::string, std::string>& headers,
                                  const std::string& body, std::string* why) {
  auto get = [&](const char* name) {
    auto it = headers.find(name);
    return it == headers.end() ? std::string() : it->second;
  };
  const std::string id = get("webhook-id"), ts = get("webhook-timestamp"),
                    signatures = get("webhook-signature");
  if (id.empty() || ts.empty() || signatures.empty()) {
    *why = "missing webhook-id, webhook-timestamp or webhook-signature";
    return false;
  }
  const std::string expected = StandardWebhooksSignature(secret, id + "." + ts + "." + body);
  std::istringstream entries(signatures);
  for (std::string entry; entries >> entry;) {
    if (entry.size() == expected.size() &&
        CRYPTO_memcmp(entry.data(), expected.data(), entry.size()) == 0) {
      return true;
    }
  }
  *why = "no entry of \"" + signatures + "\" is " + expected;
  return false;
}

}  // namespace tickwheel::testing

#endif  // TICKWHEEL_TESTS_SERVER_SUPPORT_STANDARD_WEBHOOKS_H_
