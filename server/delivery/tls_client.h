// SPDX-License-Identifier: Apache-2.0
// TLS for https:// webhooks: the client context (certificates checked
// against the system's CA store, and a private CA if given), the per-
// connection settings (SNI, the name or address the certificate must be
// for), and what a failed handshake says.
#ifndef TICKWHEEL_SERVER_DELIVERY_TLS_CLIENT_H_
#define TICKWHEEL_SERVER_DELIVERY_TLS_CLIENT_H_

#include <openssl/ssl.h>

#include <boost/asio/ssl/context.hpp>
#include <memory>
#include <string>

#include "common/status.h"

namespace tickwheel::server {

struct TlsClientOptions {
  // PEM certificates of CAs trusted in addition to the system's store
  // (/etc/ssl/certs): a private CA. Empty: the system's store only.
  std::string ca_file;
  // Tests only: no certificate is checked. Never the default; logged
  // loudly when set.
  bool insecure_skip_verify = false;
};

// TLS 1.2 or later; peers verified unless insecure_skip_verify. A CA file
// that cannot be loaded is kInvalidArgument "bad_flag" saying why.
// Thread safety: the context is shared by every connection (read-only).
Result<std::shared_ptr<boost::asio::ssl::context>> MakeTlsClientContext(
    const TlsClientOptions& options);

// Before the handshake: SNI (for a name, not an IP literal) and the host
// name or IP address the certificate must match.
void PrepareTlsConnection(SSL* ssl, const std::string& host);

// For last_error: "TLS handshake with host:port failed: the certificate has
// expired ...", naming expired, not-yet-valid, unknown CA and wrong host
// plainly.
std::string DescribeTlsFailure(const boost::system::error_code& ec, SSL* ssl,
                               const std::string& host, const std::string& host_port);

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_DELIVERY_TLS_CLIENT_H_
