#include "delivery/webhook_signer.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "common/base64.h"

namespace tickwheel::server {
namespace {

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
    signer.keys_.push_back(std::move(*key));
  }
  if (signer.keys_.empty()) {
    return Status::Invalid("bad_flag", source + ": no secret in it (one whsec_... a line)");
  }
  return signer;
}

std::string WebhookSigner::Sign(std::string_view id, std::int64_t unix_seconds,
                                std::string_view body) const {
  std::string content;
  content.reserve(id.size() + body.size() + 24);
  content.append(id);
  content += '.';
  content += std::to_string(unix_seconds);
  content += '.';
  content.append(body);
  std::string out;
  for (const std::string& key : keys_) {
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
         reinterpret_cast<const unsigned char*>(content.data()), content.size(), mac, &length);
    if (!out.empty()) out += ' ';
    out += "v1,";
    out += Base64Encode(std::string_view(reinterpret_cast<const char*>(mac), length));
  }
  return out;
}

}  // namespace tickwheel::server
