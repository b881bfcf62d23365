// SPDX-License-Identifier: Apache-2.0
#include "egress/target_policy.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>

#include "common/ascii_case.h"
#include "common/host_pattern.h"

namespace tickwheel::server {

namespace ip = boost::asio::ip;

namespace {

// ::ffff:a.b.c.d is a.b.c.d: checked as such, so it cannot slip past a
// rule written for IPv4 (and a network written so is the IPv4 one).
ip::address Normalize(const ip::address& a) {
  if (a.is_v6() && a.to_v6().is_v4_mapped()) {
    return ip::make_address_v4(ip::v4_mapped, a.to_v6());
  }
  return a;
}

// An address to check: also the IPv6 forms that carry an IPv4 address a
// connection reaches: IPv4-mapped (::ffff:a.b.c.d), IPv4-compatible
// (::a.b.c.d, deprecated but still routed by some stacks) and the NAT64
// well-known prefix (64:ff9b::a.b.c.d, which a NAT64 gateway forwards to
// a.b.c.d). :: and ::1 stay themselves.
ip::address Embedded(const ip::address& a) {
  if (!a.is_v6()) return a;
  const ip::address_v6::bytes_type b = a.to_v6().to_bytes();
  auto zero = [&](std::size_t from, std::size_t to) {
    for (std::size_t i = from; i < to; ++i) {
      if (b[i] != 0) return false;
    }
    return true;
  };
  const bool compatible = zero(0, 12) && !zero(12, 15);  // not ::, not ::1
  const bool nat64 = b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && zero(4, 12);
  if (compatible || nat64) return ip::make_address_v4(ip::address_v4::bytes_type{b[12], b[13], b[14], b[15]});
  return Normalize(a);
}

// A host name as the policy compares it: lower case, without the root's
// dot ("Example.COM." is example.com).
std::string CanonicalHost(std::string_view s) {
  std::string out = AsciiLower(s);
  if (!out.empty() && out.back() == '.') out.pop_back();
  return out;
}

bool AnyName(const std::vector<std::string>& patterns, const std::string& host) {
  return std::any_of(patterns.begin(), patterns.end(),
                     [&](const std::string& p) { return HostMatchesPattern(p, host); });
}

const Cidr* Find(const std::vector<Cidr>& networks, const ip::address& a) {
  for (const Cidr& c : networks) {
    if (c.Contains(a)) return &c;
  }
  return nullptr;
}

struct DefaultDeny {
  Cidr network;
  const char* why;
};

const std::vector<DefaultDeny>& DefaultDenies() {
  static const std::vector<DefaultDeny> kDenies = [] {
    auto cidr = [](const char* text) { return *ParseCidr(text); };
    return std::vector<DefaultDeny>{
        {cidr("169.254.169.254/32"), "the cloud metadata address"},
        {cidr("169.254.0.0/16"), "a link-local address"},
        {cidr("0.0.0.0/8"), "an unspecified (\"this host\") address"},
        {cidr("fd00:ec2::254/128"), "the cloud metadata address"},
        {cidr("fe80::/10"), "a link-local address"},
        {cidr("::/128"), "the unspecified address"},
    };
  }();
  return kDenies;
}

Status Denied(std::string message) {
  return Status::Invalid("target_denied", std::move(message));
}

bool ValidName(std::string_view name) {
  if (name.rfind("*.", 0) == 0) name.remove_prefix(2);
  if (name.empty() || name.size() > 253) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_';
  });
}

}  // namespace

// An IPv4 network contains the IPv4 address an address carries (the
// address itself, or the one embedded in its mapped, compatible or NAT64
// form); an IPv6 network contains the IPv6 address as written (a mapped
// address is IPv4 only: a network written in mapped form is parsed as the
// IPv4 one). So 10.0.0.0/8 contains 64:ff9b::10.0.0.1, and so does
// 64:ff9b::/96.
bool Cidr::Contains(const ip::address& raw) const {
  const ip::address a = network.is_v4() ? Embedded(raw) : Normalize(raw);
  if (a.is_v4() != network.is_v4()) return false;
  auto match = [&](const auto& x, const auto& y) {
    unsigned bits = prefix;
    for (std::size_t i = 0; i < x.size() && bits > 0; ++i) {
      const unsigned take = std::min(bits, 8u);
      const auto mask = static_cast<unsigned char>(0xff << (8 - take));
      if ((x[i] & mask) != (y[i] & mask)) return false;
      bits -= take;
    }
    return true;
  };
  if (a.is_v4()) return match(a.to_v4().to_bytes(), network.to_v4().to_bytes());
  return match(a.to_v6().to_bytes(), network.to_v6().to_bytes());
}

std::string Cidr::ToString() const { return network.to_string() + "/" + std::to_string(prefix); }

Result<Cidr> ParseCidr(std::string_view text) {
  // Built by appending (GCC 12 warns, wrongly, on "..." + std::string).
  auto bad = [text](std::string_view why) {
    std::string message = "\"";
    message.append(text);
    message += "\"";
    message.append(why);
    return Status::Invalid("bad_flag", std::move(message));
  };
  const std::size_t slash = text.find('/');
  boost::system::error_code ec;
  const ip::address a = ip::make_address(std::string(text.substr(0, slash)), ec);
  if (ec) return bad(" is not an address or CIDR");
  Cidr out{Normalize(a), a.is_v4() ? 32u : 128u};
  if (out.network.is_v4() && a.is_v6()) out.prefix = 32;  // a mapped address given alone
  if (slash != std::string_view::npos) {
    const std::string_view digits = text.substr(slash + 1);
    unsigned n = 0;
    auto [end, err] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
    const unsigned max = a.is_v4() ? 32 : 128;
    if (err != std::errc() || end != digits.data() + digits.size() || n > max) {
      return bad(": bad prefix length");
    }
    out.prefix = n;
    if (a.is_v6() && out.network.is_v4()) {
      if (n < 96) return bad(": write IPv4 networks as IPv4");
      out.prefix = n - 96;
    }
  }
  return out;
}

TargetPolicy::TargetPolicy() = default;

Result<TargetPolicy> TargetPolicy::Make(const std::vector<std::string>& allow,
                                        const std::vector<std::string>& deny) {
  TargetPolicy p;
  auto add = [](const std::string& entry, const char* flag, std::vector<Cidr>& networks,
                std::vector<std::string>& names) -> Status {
    if (entry.empty()) return Status::Invalid("bad_flag", std::string(flag) + ": an empty entry");
    const bool looks_like_address =
        entry.find('/') != std::string::npos || entry.find(':') != std::string::npos ||
        std::all_of(entry.begin(), entry.end(),
                    [](char c) { return std::isdigit(static_cast<unsigned char>(c)) || c == '.'; });
    if (looks_like_address) {
      Result<Cidr> c = ParseCidr(entry);
      if (!c.ok()) return Status::Invalid("bad_flag", std::string(flag) + ": " + c.status().message());
      networks.push_back(*c);
      return Status::Ok();
    }
    if (!ValidName(entry)) {
      return Status::Invalid("bad_flag", std::string(flag) + ": \"" + entry +
                                             "\" is not a CIDR, an address or a host name "
                                             "(example.com, *.example.com)");
    }
    names.push_back(CanonicalHost(entry));
    return Status::Ok();
  };
  for (const std::string& e : allow) {
    if (Status s = add(e, "--target-allow", p.allow_networks_, p.allow_names_); !s.ok()) return s;
  }
  for (const std::string& e : deny) {
    if (Status s = add(e, "--target-deny", p.deny_networks_, p.deny_names_); !s.ok()) return s;
  }
  return p;
}

Status TargetPolicy::CheckName(std::string_view raw_host) const {
  const std::string host = CanonicalHost(raw_host);
  if (AnyName(deny_names_, host)) return Denied("host " + host + " is denied by --target-deny");
  return Status::Ok();
}

Status TargetPolicy::CheckAddress(std::string_view raw_host, const ip::address& raw) const {
  const std::string host = CanonicalHost(raw_host);
  const ip::address a = Normalize(raw);
  const ip::address carried = Embedded(raw);
  // "64:ff9b::a9fe:a9fe, which carries 169.254.169.254" for an IPv4
  // address in an IPv6 one.
  std::string address = a.to_string();
  if (carried != a) address += ", which carries " + carried.to_string();
  const std::string what = host == a.to_string() ? address : host + " (" + address + ")";
  if (AnyName(deny_names_, host)) return Denied("host " + host + " is denied by --target-deny");
  if (const Cidr* c = Find(deny_networks_, a)) {
    return Denied(what + " is denied by --target-deny " + c->ToString());
  }
  const Cidr* allowed = Find(allow_networks_, a);
  for (const DefaultDeny& d : DefaultDenies()) {
    if (!d.network.Contains(a)) continue;
    // Lifted only by an allowed network of the default's family: an
    // allowed 64:ff9b::/96 does not open the metadata address behind
    // 64:ff9b::a9fe:a9fe; an allowed 169.254.169.254 does.
    const bool lifted = std::any_of(allow_networks_.begin(), allow_networks_.end(), [&](const Cidr& c) {
      return c.network.is_v4() == d.network.network.is_v4() && c.Contains(a);
    });
    if (!lifted) {
      return Denied(what + " is " + d.why + ", denied by default (--target-allow " +
                    d.network.ToString() + " would allow it)");
    }
  }
  const bool allow_list = !allow_networks_.empty() || !allow_names_.empty();
  if (allow_list && allowed == nullptr && !AnyName(allow_names_, host)) {
    return Denied(what + " is not in --target-allow");
  }
  return Status::Ok();
}

Status TargetPolicy::Check(std::string_view host,
                           const std::vector<ip::tcp::endpoint>& endpoints) const {
  if (Status s = CheckName(host); !s.ok()) return s;
  for (const ip::tcp::endpoint& e : endpoints) {
    if (Status s = CheckAddress(host, e.address()); !s.ok()) return s;
  }
  return Status::Ok();
}

std::string TargetPolicy::Describe() const {
  auto list = [](const std::vector<Cidr>& networks, const std::vector<std::string>& names) {
    std::string out;
    for (const Cidr& c : networks) out += (out.empty() ? "" : ", ") + c.ToString();
    for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
    return out;
  };
  std::string out = "link-local, metadata and unspecified addresses denied";
  if (!deny_networks_.empty() || !deny_names_.empty()) {
    out += "; denied: " + list(deny_networks_, deny_names_);
  }
  if (!allow_networks_.empty() || !allow_names_.empty()) {
    out += "; only allowed: " + list(allow_networks_, allow_names_);
  }
  return out;
}

}  // namespace tickwheel::server
