// SPDX-License-Identifier: Apache-2.0
// TargetPolicy: where webhooks may be sent (the SSRF guard). Checked on the
// addresses a target's host resolves to, at create (api/) and again at
// every attempt (delivery/), so a name whose DNS changes later cannot point
// the server at something it must not reach.
#ifndef TICKWHEEL_SERVER_EGRESS_TARGET_POLICY_H_
#define TICKWHEEL_SERVER_EGRESS_TARGET_POLICY_H_

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace tickwheel::server {

// A network: an address and a prefix length ("10.0.0.0/8", "::1/128").
struct Cidr {
  boost::asio::ip::address network;
  unsigned prefix = 0;
  bool Contains(const boost::asio::ip::address& a) const;
  std::string ToString() const;
};

// Rules (docs/server.md, "The SSRF guard"), for an address A of host H:
//   1. H matches a --target-deny name, or A is in a --target-deny network:
//      denied. Deny always wins.
//   2. A is in a network denied by default (link-local 169.254.0.0/16 with
//      the metadata address 169.254.169.254, fe80::/10, 0.0.0.0/8, ::,
//      fd00:ec2::254) and not in a --target-allow network: denied.
//   3. If --target-allow lists anything, H must match one of its names or
//      A be in one of its networks.
// A name matches "example.com" exactly; "*.example.com" matches its
// subdomains (not example.com itself). An IPv4-mapped address
// (::ffff:a.b.c.d) is the IPv4 address a.b.c.d, and a network written in
// that form is the IPv4 network (::ffff:0:0/96 is 0.0.0.0/0). The
// IPv4-compatible (::a.b.c.d) and NAT64 (64:ff9b::a.b.c.d, RFC 6052's
// well-known prefix) forms are in an IPv4 network if the address they
// carry is, and in an IPv6 network if they are: --target-deny 10.0.0.0/8
// and --target-deny 64:ff9b::/96 both deny 64:ff9b::10.0.0.1. A default
// deny is lifted only by an allowed network of its own family (an allowed
// 64:ff9b::/96 does not open 64:ff9b::169.254.169.254). A host that
// resolves to several addresses is allowed only if every one is.
//
// Thread safety: immutable after Make; use from any thread.
//
//   Result<TargetPolicy> p = TargetPolicy::Make({}, {"10.0.0.0/8"});
//   Status s = p->Check("hooks.example.com", endpoints);  // "target_denied"
class TargetPolicy {
 public:
  // Only the default denies.
  TargetPolicy();

  // Entries are CIDRs, IP addresses or host names; a bad one is
  // kInvalidArgument "bad_flag", naming the flag and the entry.
  static Result<TargetPolicy> Make(const std::vector<std::string>& allow,
                                   const std::vector<std::string>& deny);

  // The host name alone (before resolution). Ok, or kInvalidArgument
  // "target_denied" saying which rule.
  Status CheckName(std::string_view host) const;
  // One address `host` resolved to (or the host itself, an IP literal).
  Status CheckAddress(std::string_view host, const boost::asio::ip::address& address) const;
  // The name, then every address.
  Status Check(std::string_view host,
               const std::vector<boost::asio::ip::tcp::endpoint>& endpoints) const;

  // "deny 10.0.0.0/8, *.internal; allow any but the defaults", for the log.
  std::string Describe() const;

 private:
  std::vector<Cidr> allow_networks_, deny_networks_;
  std::vector<std::string> allow_names_, deny_names_;
};

// "a.b.c.d/n", "v6/n", or an address alone (/32, /128).
Result<Cidr> ParseCidr(std::string_view text);

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_EGRESS_TARGET_POLICY_H_
