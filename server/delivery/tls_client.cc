// SPDX-License-Identifier: Apache-2.0
#include "delivery/tls_client.h"

#include <openssl/x509v3.h>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ssl/error.hpp>

namespace tickwheel::server {

namespace ssl = boost::asio::ssl;

Result<std::shared_ptr<ssl::context>> MakeTlsClientContext(const TlsClientOptions& options) {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_client);
  SSL_CTX_set_min_proto_version(ctx->native_handle(), TLS1_2_VERSION);
  boost::system::error_code ec;
  if (options.insecure_skip_verify) {
    ctx->set_verify_mode(ssl::verify_none);
    return ctx;
  }
  ctx->set_verify_mode(ssl::verify_peer);
  ctx->set_default_verify_paths(ec);
  if (ec) {
    return Status::Invalid("bad_flag", "cannot load the system's CA certificates: " + ec.message() +
                                           " (is the ca-certificates package installed?)");
  }
  if (!options.ca_file.empty()) {
    ctx->load_verify_file(options.ca_file, ec);
    if (ec) {
      return Status::Invalid("bad_flag", "--ca-file " + options.ca_file +
                                             ": cannot load CA certificates from it (" +
                                             ec.message() + "); it must hold PEM certificates");
    }
  }
  return ctx;
}

void PrepareTlsConnection(SSL* ssl, const std::string& host) {
  boost::system::error_code ec;
  boost::asio::ip::make_address(host, ec);
  const bool literal = !ec;
  X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
  X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  if (literal) {
    X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str());
  } else {
    SSL_set_tlsext_host_name(ssl, host.c_str());
    X509_VERIFY_PARAM_set1_host(param, host.c_str(), host.size());
  }
}

std::string DescribeTlsFailure(const boost::system::error_code& ec, SSL* ssl,
                               const std::string& host, const std::string& host_port) {
  const std::string prefix = "TLS handshake with " + host_port + " failed: ";
  const long verify = ssl != nullptr ? SSL_get_verify_result(ssl) : X509_V_OK;
  if (verify != X509_V_OK) {
    const std::string code = " (X509 error " + std::to_string(verify) + ": " +
                             X509_verify_cert_error_string(verify) + ")";
    switch (verify) {
      case X509_V_ERR_CERT_HAS_EXPIRED:
        return prefix + "the certificate has expired" + code;
      case X509_V_ERR_CERT_NOT_YET_VALID:
        return prefix + "the certificate is not valid yet" + code;
      case X509_V_ERR_HOSTNAME_MISMATCH:
      case X509_V_ERR_IP_ADDRESS_MISMATCH:
        return prefix + "the certificate is not for " + host + " (wrong host)" + code;
      case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
      case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
      case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
      case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
      case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
        return prefix +
               "the certificate is signed by an unknown CA (not in the system's store or "
               "--ca-file)" + code;
      default:
        return prefix + "the certificate is not valid" + code;
    }
  }
  if (ec == boost::asio::ssl::error::stream_truncated) {
    return prefix +
           "the receiver closed the connection during the handshake (does the receiver speak "
           "TLS on that port?)";
  }
  std::string message = ec.message();
  if (message.find("wrong version number") != std::string::npos) {
    message += " (does the receiver speak TLS on that port?)";  // a plain HTTP answer
  }
  return prefix + message;
}

}  // namespace tickwheel::server
