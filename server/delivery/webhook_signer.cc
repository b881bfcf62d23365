// SPDX-License-Identifier: Apache-2.0
#include "delivery/webhook_signer.h"

#include <openssl/evp.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "client/webhook_mac.h"  // the client's VerifyWebhook computes the same
#include "common/base64.h"

namespace tickwheel::server {

// A context keyed once; each signature works on a copy of it.
struct WebhookSigner::Keyed {
  EVP_MAC_CTX* ctx = nullptr;
};

void WebhookSigner::Free::operator()(Keyed* k) const {
  if (k->ctx != nullptr) EVP_MAC_CTX_free(k->ctx);
  delete k;
}

namespace {

std::atomic<std::uint64_t> next_signer_id{1};

// This thread's copies of one signer's keyed states.
struct ThreadStates {
  std::uint64_t signer = 0;
  std::vector<EVP_MAC_CTX*> contexts;
  void Clear() {
    for (EVP_MAC_CTX* c : contexts) EVP_MAC_CTX_free(c);
    contexts.clear();
    signer = 0;
  }
  ~ThreadStates() { Clear(); }
};

std::string Trim(const std::string& s) {
  const std::size_t from = s.find_first_not_of(" \t\r");
  if (from == std::string::npos) return "";
  const std::size_t to = s.find_last_not_of(" \t\r");
  return s.substr(from, to - from + 1);
}

}  // namespace

Result<WebhookSigner> WebhookSigner::FromFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return Status::Invalid("bad_flag", "--webhook-secret-file " + path +
                                           ": cannot read it: " + std::strerror(errno));
  }
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(std::move(line));
  return FromLines(lines, "--webhook-secret-file " + path);
}

Result<WebhookSigner> WebhookSigner::FromLines(const std::vector<std::string>& lines,
                                               const std::string& source) {
  constexpr std::string_view kPrefix = "whsec_";
  WebhookSigner signer;
  signer.id_ = next_signer_id.fetch_add(1);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string line = Trim(lines[i]);
    if (line.empty() || line[0] == '#') continue;
    const std::string where = source + ", line " + std::to_string(i + 1);
    if (line.rfind(kPrefix, 0) != 0) {
      return Status::Invalid("bad_flag", where + ": a secret must look like whsec_<base64>");
    }
    std::optional<std::string> key = Base64Decode(std::string_view(line).substr(kPrefix.size()));
    if (!key) return Status::Invalid("bad_flag", where + ": what follows whsec_ is not base64");
    if (key->size() < 24 || key->size() > 64) {
      return Status::Invalid("bad_flag", where + ": the key is " + std::to_string(key->size()) +
                                             " bytes; Standard Webhooks keys are 24..64 bytes "
                                             "(e.g. echo whsec_$(openssl rand -base64 32))");
    }
    std::shared_ptr<Keyed> keyed(new Keyed, Free());
    keyed->ctx = client::internal::NewWebhookMac(*key);
    if (keyed->ctx == nullptr) {
      return Status::Invalid("bad_flag", where + ": OpenSSL cannot make an HMAC-SHA256 with it");
    }
    signer.keyed_.push_back(std::move(keyed));
  }
  if (signer.keyed_.empty()) {
    return Status::Invalid("bad_flag", source + ": no secret in it (one whsec_... a line)");
  }
  return signer;
}

std::string WebhookSigner::Sign(std::string_view id, std::int64_t unix_seconds,
                                std::string_view body) const {
  thread_local ThreadStates states;
  if (states.signer != id_) {
    states.Clear();
    for (const std::shared_ptr<Keyed>& keyed : keyed_) {
      states.contexts.push_back(EVP_MAC_CTX_dup(keyed->ctx));
    }
    states.signer = id_;
  }
  const std::string timestamp = std::to_string(unix_seconds);
  std::string out;
  out.reserve(keyed_.size() * 48);
  for (EVP_MAC_CTX* ctx : states.contexts) {
    if (!out.empty()) out += ' ';
    out += "v1,";
    client::internal::AppendWebhookSignature(ctx, id, timestamp, body, out);
  }
  return out;
}

}  // namespace tickwheel::server
