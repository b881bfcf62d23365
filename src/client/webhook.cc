// SPDX-License-Identifier: Apache-2.0
#include "tickwheel/webhook.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <algorithm>
#include <boost/json/parse.hpp>
#include <cctype>
#include <cstdint>
#include <memory>

#include "client/webhook_mac.h"

namespace tickwheel::client {

namespace {

// The key of a secret: what follows "whsec_" (if there), base64-decoded.
std::string Key(std::string_view secret) {
  while (!secret.empty() && std::isspace(static_cast<unsigned char>(secret.front()))) {
    secret.remove_prefix(1);
  }
  while (!secret.empty() && std::isspace(static_cast<unsigned char>(secret.back()))) {
    secret.remove_suffix(1);
  }
  if (secret.rfind("whsec_", 0) == 0) secret.remove_prefix(6);
  const std::size_t pad_from = std::min(secret.find('='), secret.size());
  const std::size_t pads = secret.size() - pad_from;
  const bool base64 =
      !secret.empty() && secret.size() % 4 == 0 && pads <= 2 &&
      std::all_of(secret.begin(), secret.begin() + static_cast<std::ptrdiff_t>(pad_from),
                  [](char c) {
                    return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '/';
                  }) &&
      secret.find_first_not_of('=', pad_from) == std::string_view::npos;
  if (!base64) throw std::invalid_argument("a webhook secret is whsec_ followed by base64");
  std::string key(secret.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(key.data()),
                                reinterpret_cast<const unsigned char*>(secret.data()),
                                static_cast<int>(secret.size()));
  if (n < 0) throw std::invalid_argument("a webhook secret is whsec_ followed by base64");
  key.resize(static_cast<std::size_t>(n) - pads);
  return key;
}

// base64 of HMAC-SHA256(key, "{id}.{timestamp}.{body}"), as the server's
// signer makes it (webhook_mac.h).
std::string Signature(const std::string& key, std::string_view id, std::string_view timestamp,
                      std::string_view body) {
  std::unique_ptr<EVP_MAC_CTX, void (*)(EVP_MAC_CTX*)> mac(internal::NewWebhookMac(key),
                                                           EVP_MAC_CTX_free);
  if (mac == nullptr) throw std::runtime_error("OpenSSL cannot make an HMAC-SHA256");
  std::string out;
  internal::AppendWebhookSignature(mac.get(), id, timestamp, body, out);
  return out;
}

const std::string* Header(const std::map<std::string, std::string>& headers,
                          std::string_view name) {
  for (const auto& [key, value] : headers) {
    if (key.size() == name.size() &&
        std::equal(key.begin(), key.end(), name.begin(), [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) == b;
        })) {
      return &value;
    }
  }
  return nullptr;
}

}  // namespace

boost::json::value VerifyWebhook(const std::vector<std::string>& secrets,
                                 const std::map<std::string, std::string>& headers,
                                 std::string_view body, std::chrono::seconds tolerance,
                                 std::optional<std::chrono::system_clock::time_point> now) {
  using Reason = WebhookVerificationError::Reason;
  if (secrets.empty()) throw std::invalid_argument("no webhook secret given");
  std::vector<std::string> keys;
  for (const std::string& s : secrets) keys.push_back(Key(s));
  const std::string* id = Header(headers, "webhook-id");
  const std::string* timestamp = Header(headers, "webhook-timestamp");
  const std::string* signatures = Header(headers, "webhook-signature");
  if (!id || !timestamp || !signatures || id->empty() || timestamp->empty() ||
      signatures->empty()) {
    throw WebhookVerificationError(
        Reason::kMissing, "the delivery lacks webhook-id, webhook-timestamp or webhook-signature");
  }
  if (timestamp->size() > 18 ||
      !std::all_of(timestamp->begin(), timestamp->end(),
                   [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
    throw WebhookVerificationError(Reason::kTimestamp,
                                   "webhook-timestamp \"" + *timestamp + "\" is not Unix seconds");
  }
  const std::int64_t sent = std::stoll(*timestamp);
  const std::int64_t clock = std::chrono::duration_cast<std::chrono::seconds>(
                                 now.value_or(std::chrono::system_clock::now()).time_since_epoch())
                                 .count();
  if (std::max(clock - sent, sent - clock) > tolerance.count()) {
    throw WebhookVerificationError(
        Reason::kTimestamp, "webhook-timestamp " + *timestamp + " is more than " +
                                std::to_string(tolerance.count()) + " s from now (" +
                                std::to_string(clock) + "): a replay, or a clock that is off");
  }
  std::vector<std::string> expected;
  for (const std::string& key : keys) expected.push_back(Signature(key, *id, *timestamp, body));
  std::string_view entries = *signatures;
  while (!entries.empty()) {
    const std::size_t space = entries.find(' ');
    std::string_view entry = entries.substr(0, space);
    entries = space == std::string_view::npos ? std::string_view() : entries.substr(space + 1);
    if (entry.rfind("v1,", 0) != 0) continue;
    entry.remove_prefix(3);
    for (const std::string& e : expected) {
      if (e.size() == entry.size() && CRYPTO_memcmp(e.data(), entry.data(), e.size()) == 0) {
        boost::system::error_code ec;
        boost::json::value v = boost::json::parse(body, ec);
        if (ec) {
          throw WebhookVerificationError(Reason::kSignature,
                                         "the signed body is not JSON: " + ec.message());
        }
        return v;
      }
    }
  }
  throw WebhookVerificationError(Reason::kSignature,
                                 "no webhook-signature entry matches the secret(s)");
}

}  // namespace tickwheel::client
