// SPDX-License-Identifier: Apache-2.0
// TestPki: certificates made at test time with the openssl command line,
// in a directory of the test's: a CA the server is told to trust, another
// it does not know, and server certificates issued by either (valid,
// expired, or for another host).
#ifndef TICKWHEEL_TESTS_SERVER_SUPPORT_TEST_PKI_H_
#define TICKWHEEL_TESTS_SERVER_SUPPORT_TEST_PKI_H_

#include <string>
#include <vector>

namespace tickwheel::testing {

struct CertFiles {
  std::string cert;  // PEM certificate
  std::string key;   // PEM private key (ECDSA P-256)
};

// Throws std::runtime_error (with openssl's output) if openssl fails.
class TestPki {
 public:
  // Makes the two CAs in `dir` (which must exist).
  explicit TestPki(std::string dir);

  // The CA to trust (--ca-file); the other one nobody trusts.
  const std::string& ca_file() const { return ca_.cert; }

  // A server certificate for `sans` ("DNS:localhost", "IP:127.0.0.1"),
  // valid from now for `days` (negative: expired that many days ago),
  // issued by the trusted CA or by the unknown one.
  CertFiles Issue(const std::string& name, const std::vector<std::string>& sans, int days = 2,
                  bool unknown_ca = false);

 private:
  CertFiles MakeCa(const std::string& name);

  std::string dir_;
  CertFiles ca_, unknown_ca_;
};

}  // namespace tickwheel::testing

#endif  // TICKWHEEL_TESTS_SERVER_SUPPORT_TEST_PKI_H_
