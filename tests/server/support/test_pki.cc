// SPDX-License-Identifier: Apache-2.0
#include "support/test_pki.h"

#include <cstdio>
#include <fstream>
#include <stdexcept>

namespace tickwheel::testing {
namespace {

void Run(const std::string& command) {
  const std::string full = command + " 2>&1";
  FILE* p = popen(full.c_str(), "r");
  if (p == nullptr) throw std::runtime_error("cannot run: " + command);
  std::string out;
  char buf[1024];
  while (std::size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  if (pclose(p) != 0) throw std::runtime_error("failed: " + command + "\n" + out);
}

constexpr const char* kKey = "-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes";

}  // namespace

TestPki::TestPki(std::string dir) : dir_(std::move(dir)) {
  ca_ = MakeCa("ca");
  unknown_ca_ = MakeCa("unknown-ca");
}

CertFiles TestPki::MakeCa(const std::string& name) {
  CertFiles ca{dir_ + "/" + name + ".pem", dir_ + "/" + name + ".key"};
  Run(std::string("openssl req -x509 ") + kKey + " -keyout " + ca.key + " -out " + ca.cert +
      " -days 30 -subj '/CN=tickwheel test " + name + "'" +
      " -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign");
  return ca;
}

CertFiles TestPki::Issue(const std::string& name, const std::vector<std::string>& sans, int days,
                         bool unknown_ca) {
  const CertFiles& issuer = unknown_ca ? unknown_ca_ : ca_;
  CertFiles out{dir_ + "/" + name + ".pem", dir_ + "/" + name + ".key"};
  const std::string csr = dir_ + "/" + name + ".csr";
  const std::string ext = dir_ + "/" + name + ".ext";
  std::string san = "subjectAltName=";
  for (std::size_t i = 0; i < sans.size(); ++i) san += (i ? "," : "") + sans[i];
  std::ofstream(ext) << san << "\nextendedKeyUsage=serverAuth\n";
  Run(std::string("openssl req ") + kKey + " -keyout " + out.key + " -out " + csr +
      " -subj '/CN=" + name + "'");
  Run("openssl x509 -req -in " + csr + " -CA " + issuer.cert + " -CAkey " + issuer.key +
      " -CAcreateserial -days " + std::to_string(days) + " -extfile " + ext + " -out " + out.cert);
  return out;
}

}  // namespace tickwheel::testing
