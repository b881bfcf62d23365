// SPDX-License-Identifier: Apache-2.0
// The pieces of access and delivery security, in-process: the SSRF policy,
// API tokens, webhook signatures (checked against OpenSSL's HMAC called
// here and the Standard Webhooks specification's own example), base64.
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <boost/asio/ip/address.hpp>

#include "api/auth.h"
#include "api/request_guard.h"
#include "api/timer_json.h"
#include "common/base64.h"
#include "common/redact.h"
#include "delivery/webhook_signer.h"
#include "egress/target_policy.h"

namespace tickwheel::server {
namespace {

namespace ip = boost::asio::ip;
namespace http = boost::beast::http;

std::vector<ip::tcp::endpoint> At(std::initializer_list<const char*> addresses) {
  std::vector<ip::tcp::endpoint> out;
  for (const char* a : addresses) out.emplace_back(ip::make_address(a), 80);
  return out;
}

std::string Reason(const Status& s) { return s.ok() ? "ok" : s.reason(); }

TEST(TargetPolicyTest, DeniesLinkLocalAndTheMetadataAddressByDefault) {
  TargetPolicy p;
  EXPECT_EQ(Reason(p.Check("127.0.0.1", At({"127.0.0.1"}))), "ok");
  EXPECT_EQ(Reason(p.Check("hooks.example.com", At({"93.184.216.34"}))), "ok");
  EXPECT_EQ(Reason(p.Check("10.1.2.3", At({"10.1.2.3"}))), "ok");
  Status metadata = p.Check("169.254.169.254", At({"169.254.169.254"}));
  EXPECT_EQ(Reason(metadata), "target_denied");
  EXPECT_NE(metadata.message().find("metadata"), std::string::npos) << metadata.message();
  EXPECT_EQ(Reason(p.Check("x", At({"169.254.10.1"}))), "target_denied");
  EXPECT_EQ(Reason(p.Check("x", At({"fe80::1"}))), "target_denied");
  EXPECT_EQ(Reason(p.Check("x", At({"0.0.0.0"}))), "target_denied");
  EXPECT_EQ(Reason(p.Check("x", At({"::"}))), "target_denied");
  EXPECT_EQ(Reason(p.Check("x", At({"fd00:ec2::254"}))), "target_denied");
  // An IPv4-mapped IPv6 address is the IPv4 address it maps.
  EXPECT_EQ(Reason(p.Check("x", At({"::ffff:169.254.169.254"}))), "target_denied");
  // So are the IPv4-compatible and NAT64 forms (a NAT64 gateway forwards
  // 64:ff9b::a9fe:a9fe to 169.254.169.254).
  EXPECT_EQ(Reason(p.Check("x", At({"::169.254.169.254"}))), "target_denied");
  EXPECT_EQ(Reason(p.Check("x", At({"64:ff9b::169.254.169.254"}))), "target_denied");
  EXPECT_EQ(Reason(p.Check("x", At({"64:ff9b::a9fe:a9fe"}))), "target_denied");
  EXPECT_EQ(Reason(p.Check("x", At({"64:ff9b::93.184.216.34"}))), "ok");
  EXPECT_EQ(Reason(p.Check("x", At({"::1"}))), "ok");  // loopback, as 127.0.0.1
  // A name with one denied address among good ones is denied.
  Status mixed = p.Check("rebind.example", At({"93.184.216.34", "169.254.169.254"}));
  EXPECT_EQ(Reason(mixed), "target_denied");
  EXPECT_NE(mixed.message().find("rebind.example (169.254.169.254)"), std::string::npos)
      << mixed.message();
}

TEST(TargetPolicyTest, DenyWinsAndAnAllowListAllowsOnlyWhatItNames) {
  Result<TargetPolicy> deny = TargetPolicy::Make({}, {"10.0.0.0/8", "*.internal.example", "::1"});
  ASSERT_TRUE(deny.ok()) << deny.status().ToString();
  EXPECT_EQ(Reason(deny->Check("a", At({"10.200.0.1"}))), "target_denied");
  EXPECT_EQ(Reason(deny->Check("a", At({"::ffff:10.0.0.1"}))), "target_denied");
  EXPECT_EQ(Reason(deny->Check("a", At({"::10.0.0.1"}))), "target_denied");
  EXPECT_EQ(Reason(deny->Check("a", At({"64:ff9b::10.0.0.1"}))), "target_denied");
  EXPECT_EQ(Reason(deny->Check("a", At({"::1"}))), "target_denied");
  EXPECT_EQ(Reason(deny->Check("a", At({"11.0.0.1"}))), "ok");
  EXPECT_EQ(Reason(deny->CheckName("db.internal.example")), "target_denied");
  EXPECT_EQ(Reason(deny->CheckName("DB.Internal.Example.")), "target_denied");
  EXPECT_EQ(Reason(deny->CheckName("internal.example")), "ok");  // subdomains only

  Result<TargetPolicy> allow =
      TargetPolicy::Make({"192.168.0.0/16", "hooks.example.com", "169.254.169.254"},
                         {"192.168.66.0/24"});
  ASSERT_TRUE(allow.ok());
  EXPECT_EQ(Reason(allow->Check("a", At({"192.168.1.1"}))), "ok");
  EXPECT_EQ(Reason(allow->Check("a", At({"192.168.66.1"}))), "target_denied");  // deny wins
  EXPECT_EQ(Reason(allow->Check("a", At({"8.8.8.8"}))), "target_denied");
  EXPECT_EQ(Reason(allow->Check("hooks.example.com", At({"8.8.8.8"}))), "ok");
  // An allowed name does not lift the default denies; an allowed network does.
  EXPECT_EQ(Reason(allow->Check("hooks.example.com", At({"169.254.1.1"}))), "target_denied");
  EXPECT_EQ(Reason(allow->Check("a", At({"169.254.169.254"}))), "ok");
}

// Networks written in IPv6 match the NAT64 and IPv4-compatible forms as
// written, beside the IPv4 networks that match the address they carry; a
// network written in IPv4-mapped form is the IPv4 one. (Before, every
// embedded form was matched as IPv4 only: --target-deny 64:ff9b::/96 and
// --target-allow 64:ff9b::/96 matched nothing.)
TEST(TargetPolicyTest, Nat64AndMappedNetworksMatchWhatTheyName) {
  Result<TargetPolicy> deny_nat64 = TargetPolicy::Make({}, {"64:ff9b::/96"});
  ASSERT_TRUE(deny_nat64.ok());
  EXPECT_EQ(Reason(deny_nat64->Check("a", At({"64:ff9b::93.184.216.34"}))), "target_denied");
  EXPECT_EQ(Reason(deny_nat64->Check("a", At({"93.184.216.34"}))), "ok");
  EXPECT_EQ(Reason(deny_nat64->Check("a", At({"::ffff:93.184.216.34"}))), "ok");

  Result<TargetPolicy> allow_nat64 = TargetPolicy::Make({"64:ff9b::/96"}, {});
  ASSERT_TRUE(allow_nat64.ok());
  EXPECT_EQ(Reason(allow_nat64->Check("a", At({"64:ff9b::93.184.216.34"}))), "ok");
  EXPECT_EQ(Reason(allow_nat64->Check("a", At({"93.184.216.34"}))), "target_denied");
  // An allowed IPv6 prefix does not lift the IPv4 default denies behind it;
  // an allowed IPv4 network does.
  Status metadata = allow_nat64->Check("a", At({"64:ff9b::a9fe:a9fe"}));
  EXPECT_EQ(Reason(metadata), "target_denied");
  EXPECT_NE(metadata.message().find("64:ff9b::a9fe:a9fe, which carries 169.254.169.254"),
            std::string::npos)
      << metadata.message();
  Result<TargetPolicy> allow_metadata = TargetPolicy::Make({"169.254.169.254"}, {});
  ASSERT_TRUE(allow_metadata.ok());
  EXPECT_EQ(Reason(allow_metadata->Check("a", At({"64:ff9b::a9fe:a9fe"}))), "ok");

  Result<TargetPolicy> deny_compatible = TargetPolicy::Make({}, {"::/96"});
  ASSERT_TRUE(deny_compatible.ok());
  EXPECT_EQ(Reason(deny_compatible->Check("a", At({"::10.0.0.1"}))), "target_denied");
  EXPECT_EQ(Reason(deny_compatible->Check("a", At({"10.0.0.1"}))), "ok");

  // ::ffff:0:0/96 holds every IPv4-mapped address, which is every IPv4
  // address: it is 0.0.0.0/0, and the log says so.
  Result<TargetPolicy> deny_mapped = TargetPolicy::Make({}, {"::ffff:0:0/96"});
  ASSERT_TRUE(deny_mapped.ok());
  EXPECT_NE(deny_mapped->Describe().find("0.0.0.0/0"), std::string::npos) << deny_mapped->Describe();
  EXPECT_EQ(Reason(deny_mapped->Check("a", At({"::ffff:10.0.0.1"}))), "target_denied");
  EXPECT_EQ(Reason(deny_mapped->Check("a", At({"10.0.0.1"}))), "target_denied");
  EXPECT_EQ(Reason(deny_mapped->Check("a", At({"64:ff9b::10.0.0.1"}))), "target_denied");
  EXPECT_EQ(Reason(deny_mapped->Check("a", At({"2001:db8::1"}))), "ok");
  Result<TargetPolicy> allow_mapped = TargetPolicy::Make({"::ffff:0:0/96"}, {});
  ASSERT_TRUE(allow_mapped.ok());
  EXPECT_EQ(Reason(allow_mapped->Check("a", At({"10.0.0.1"}))), "ok");
  EXPECT_EQ(Reason(allow_mapped->Check("a", At({"2001:db8::1"}))), "target_denied");
}

TEST(TargetPolicyTest, BadEntriesNameTheFlag) {
  for (const char* bad : {"10.0.0.0/33", "1.2.3", "not a name", "::1/129", ""}) {
    Result<TargetPolicy> p = TargetPolicy::Make({}, {bad});
    ASSERT_FALSE(p.ok()) << bad;
    EXPECT_NE(p.status().message().find("--target-deny"), std::string::npos) << p.status().message();
  }
  EXPECT_FALSE(TargetPolicy::Make({"300.1.1.1"}, {}).ok());
}

// Every form libpq and NATS accept loses its secret, whatever characters
// the secret holds; what is not a secret stays readable.
TEST(RedactTest, EveryFormOfACredentialIsRedacted) {
  struct Case {
    std::string in, secret, kept;
  };
  const std::vector<Case> cases = {
      {"postgresql://bob:s3cret@db:5432/app", "s3cret", "postgresql://bob:***@db:5432/app"},
      {"postgresql://bob:p?a#ss@db/app", "p?a#ss", "postgresql://bob:***@db/app"},
      {"postgresql://bob:p@ss@db/app", "p@ss", "postgresql://bob:***@db/app"},
      {"postgresql://bob@db/app?password=s3cret&sslmode=require", "s3cret",
       "postgresql://bob@db/app?password=***&sslmode=require"},
      {"postgresql://db/app?sslpassword=s3cret", "s3cret", "postgresql://db/app?sslpassword=***"},
      {"host=db user=bob password=s3cret dbname=app", "s3cret",
       "host=db user=bob password=*** dbname=app"},
      {"host=db password = s3cret dbname=app", "s3cret", "host=db password = *** dbname=app"},
      {R"(host=db password='s3 cr\'et' dbname=app)", R"(cr\'et)", "host=db password=*** dbname=app"},
      {"PASSWORD=s3cret host=db", "s3cret", "PASSWORD=*** host=db"},
      {"nats://t0ken@nats:4222", "t0ken", "nats://***@nats:4222"},
      {"nats://user:s3cret@nats:4222", "s3cret", "nats://user:***@nats:4222"},
      {"nats://nats:4222?token=s3cret", "s3cret", "nats://nats:4222?token=***"},
  };
  for (const Case& c : cases) {
    const std::string out = RedactUrl(c.in);
    EXPECT_EQ(out.find(c.secret), std::string::npos) << c.in << " -> " << out;
    EXPECT_EQ(out, c.kept) << c.in;
  }
  EXPECT_EQ(RedactUrl("postgresql://db/app"), "postgresql://db/app");
  EXPECT_EQ(RedactUrl("host=db passwordless=1"), "host=db passwordless=1");
}

TEST(Base64Test, RoundTripsAndRefusesWhatIsNotBase64) {
  for (std::string s : std::vector<std::string>{"", "f", "fo", "foo", "foob", "fooba", "foobar", std::string("\0\xff\x10", 3)}) {
    EXPECT_EQ(Base64Decode(Base64Encode(s)), s);
  }
  EXPECT_EQ(Base64Encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(Base64Encode("fo"), "Zm8=");
  EXPECT_FALSE(Base64Decode("Zm9"));
  EXPECT_FALSE(Base64Decode("Zm9v!mFy"));
  EXPECT_FALSE(Base64Decode("Zm=v"));
}

// HMAC-SHA256 by OpenSSL, called here: not the server's signing code.
std::string ReferenceSignature(const std::string& key, const std::string& content) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(content.data()), content.size(), mac, &n);
  unsigned char b64[4 * EVP_MAX_MD_SIZE];
  const int len = EVP_EncodeBlock(b64, mac, static_cast<int>(n));
  return "v1," + std::string(reinterpret_cast<char*>(b64), static_cast<std::size_t>(len));
}

TEST(WebhookSignerTest, MatchesTheStandardWebhooksExample) {
  // The example of the Standard Webhooks specification and its libraries.
  Result<WebhookSigner> signer =
      WebhookSigner::FromLines({"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, "test");
  ASSERT_TRUE(signer.ok()) << signer.status().ToString();
  EXPECT_EQ(signer->Sign("msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, R"({"test": 2432232314})"),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
}

TEST(WebhookSignerTest, EverySecretSignsForRotation) {
  const std::string k1(32, '\x01'), k2 = "another key of at least 24 bytes";
  Result<WebhookSigner> signer = WebhookSigner::FromLines(
      {"# old and new", "whsec_" + Base64Encode(k1), "", "  whsec_" + Base64Encode(k2) + "  "},
      "test");
  ASSERT_TRUE(signer.ok()) << signer.status().ToString();
  EXPECT_EQ(signer->secrets(), 2u);
  const std::string body = R"({"id":"t1","payload":{"a":1},"fire_at_ms":5,"attempt":1})";
  EXPECT_EQ(signer->Sign("t1", 1700000000, body),
            ReferenceSignature(k1, "t1.1700000000." + body) + " " +
                ReferenceSignature(k2, "t1.1700000000." + body));
}

TEST(WebhookSignerTest, BadSecretsNameTheLineNeverTheSecret) {
  const std::string short_key = "whsec_" + Base64Encode("too short");
  for (const std::string& line : {std::string("not-a-secret-at-all"), std::string("whsec_%%%%"),
                                  short_key}) {
    Result<WebhookSigner> s = WebhookSigner::FromLines({"# c", line}, "--webhook-secret-file f");
    ASSERT_FALSE(s.ok()) << line;
    EXPECT_NE(s.status().message().find("line 2"), std::string::npos) << s.status().message();
    EXPECT_EQ(s.status().message().find(line), std::string::npos) << s.status().message();
  }
  EXPECT_FALSE(WebhookSigner::FromLines({"# nothing"}, "f").ok());
}

HttpRequest WithAuthorization(const std::string& value, http::verb method = http::verb::get) {
  HttpRequest req{method, "/v1/timers", 11};
  if (!value.empty()) req.set(http::field::authorization, value);
  return req;
}

TEST(TokenAuthTest, AuthenticatesBearerTokensAndAuthorizesByRole) {
  const std::string admin = "admin-token-0123456789abcdef", reader = "read-token-0123456789abcdef";
  Result<TokenAuth> auth = TokenAuth::FromLines(
      {"# tokens", "admin " + admin, "", "  read   " + reader}, "--auth-token-file f");
  ASSERT_TRUE(auth.ok()) << auth.status().ToString();
  EXPECT_TRUE(auth->enabled());
  EXPECT_EQ(*auth->Authenticate(WithAuthorization("Bearer " + admin)), Role::kAdmin);
  EXPECT_EQ(*auth->Authenticate(WithAuthorization("bearer " + reader)), Role::kRead);
  Result<Role> none = auth->Authenticate(WithAuthorization(""));
  EXPECT_EQ(none.status().code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(none.status().reason(), "unauthenticated");
  Result<Role> wrong = auth->Authenticate(WithAuthorization("Bearer " + admin + "x"));
  EXPECT_EQ(wrong.status().reason(), "invalid_token");
  EXPECT_EQ(auth->Authenticate(WithAuthorization("Basic " + admin)).status().code(),
            StatusCode::kUnauthenticated);
  EXPECT_EQ(auth->Authenticate(WithAuthorization("Bearer")).status().code(),
            StatusCode::kUnauthenticated);

  EXPECT_TRUE(TokenAuth::Authorize(Role::kRead, http::verb::get).ok());
  for (http::verb v : {http::verb::post, http::verb::patch, http::verb::delete_}) {
    EXPECT_EQ(TokenAuth::Authorize(Role::kRead, v).code(), StatusCode::kPermissionDenied);
    EXPECT_TRUE(TokenAuth::Authorize(Role::kAdmin, v).ok());
    EXPECT_TRUE(TokenAuth::Authorize(Role::kAnonymous, v).ok());
  }
  HttpResponse res = AuthErrorResponse(wrong.status());
  EXPECT_EQ(res.result_int(), 401u);
  EXPECT_EQ(res[http::field::www_authenticate], R"(Bearer realm="tickwheel", error="invalid_token")");
  EXPECT_EQ(AuthErrorResponse(TokenAuth::Authorize(Role::kRead, http::verb::post)).result_int(), 403u);

  // Without tokens every request is anonymous, and allowed.
  TokenAuth open;
  EXPECT_EQ(*open.Authenticate(WithAuthorization("")), Role::kAnonymous);
}

TEST(TokenAuthTest, BadTokenFilesNameTheLineNeverTheToken) {
  const std::string token = "secret-token-0123456789";
  for (const std::vector<std::string>& lines :
       std::vector<std::vector<std::string>>{{"root " + token},
                                             {token + " admin"},  // the columns swapped
                                             {"admin"},
                                             {"admin short"},
                                             {"admin " + token + " extra"},
                                             {"admin " + token, "read " + token},
                                             {"admin tok\"en-0123456789abcdef"}}) {
    Result<TokenAuth> auth = TokenAuth::FromLines(lines, "--auth-token-file f");
    ASSERT_FALSE(auth.ok()) << lines[0];
    EXPECT_NE(auth.status().message().find("line "), std::string::npos) << auth.status().message();
    EXPECT_EQ(auth.status().message().find(token), std::string::npos) << auth.status().message();
  }
  EXPECT_FALSE(TokenAuth::FromLines({"# only a comment"}, "f").ok());
}

HttpRequest Head(std::initializer_list<std::pair<const char*, const char*>> fields) {
  HttpRequest req{http::verb::post, "/v1/timers", 11};
  for (const auto& [name, value] : fields) req.insert(name, value);
  return req;
}

TEST(RequestGuardTest, HostMustNameTheServer) {
  Result<RequestGuard> guard = RequestGuard::Make({.public_hosts = {"Timers.Internal.", "*.apps.test"}});
  ASSERT_TRUE(guard.ok()) << guard.status().ToString();
  for (const char* host : {"127.0.0.1:8080", "127.0.0.1", "[::1]:8080", "10.1.2.3", "localhost:8080",
                           "LOCALHOST", "timers.internal:443", "timers.internal.", "a.apps.test"}) {
    EXPECT_TRUE(guard->CheckHost(Head({{"Host", host}})).ok()) << host;
  }
  for (const char* host : {"evil.example:8080", "localhost.evil.example", "apps.test", "timers.internal.evil",
                           "127.0.0.1.nip.io", "[::1", "a b", ""}) {
    Status s = guard->CheckHost(Head({{"Host", host}}));
    EXPECT_EQ(Reason(s), "misdirected_request") << host;
    EXPECT_EQ(HttpStatusOf(s), 421) << host;
  }
  EXPECT_TRUE(guard->CheckHost(Head({})).ok());  // HTTP/1.0 without Host
  EXPECT_EQ(Reason(guard->CheckHost(Head({{"Host", "127.0.0.1"}, {"Host", "evil.example"}}))), "bad_request");
  EXPECT_EQ(RequestGuard::HostOf("[::1]:80"), "::1");
  EXPECT_EQ(RequestGuard::HostOf("Example.COM.:8080"), "example.com");
  EXPECT_FALSE(RequestGuard::Make({.public_hosts = {"https://x"}}).ok());
}

TEST(RequestGuardTest, OnlyTheServersOwnOriginAndListedOnesPass) {
  Result<RequestGuard> guard = RequestGuard::Make({.allow_origins = {"https://Ops.Example.com/"}});
  ASSERT_TRUE(guard.ok()) << guard.status().ToString();
  // Not from a page, or from the server's own (the console).
  EXPECT_FALSE(*guard->CheckOrigin(Head({{"Host", "127.0.0.1:8080"}})));
  EXPECT_FALSE(*guard->CheckOrigin(Head({{"Host", "127.0.0.1:8080"}, {"Sec-Fetch-Site", "same-origin"}})));
  EXPECT_FALSE(*guard->CheckOrigin(Head({{"Host", "127.0.0.1:8080"}, {"Sec-Fetch-Site", "none"}})));
  EXPECT_FALSE(*guard->CheckOrigin(Head({{"Host", "127.0.0.1:8080"}, {"Origin", "http://127.0.0.1:8080"}})));
  EXPECT_FALSE(*guard->CheckOrigin(Head({{"Host", "LocalHost:8080"}, {"Origin", "http://localhost:8080"}})));
  // A listed origin: its answers carry CORS headers.
  Result<std::optional<std::string>> ops =
      guard->CheckOrigin(Head({{"Host", "127.0.0.1:8080"}, {"Origin", "https://ops.example.com"}}));
  ASSERT_TRUE(ops.ok());
  EXPECT_EQ(ops->value_or(""), "https://ops.example.com");
  for (const auto& fields : std::vector<std::vector<std::pair<const char*, const char*>>>{
           {{"Host", "127.0.0.1:8080"}, {"Origin", "https://evil.example"}},
           {{"Host", "127.0.0.1:8080"}, {"Origin", "null"}},
           {{"Host", "127.0.0.1:8080"}, {"Origin", "http://127.0.0.1:8081"}},
           {{"Host", "127.0.0.1:8080"}, {"Origin", "https://ops.example.com.evil"}},
           {{"Host", "127.0.0.1:8080"}, {"Sec-Fetch-Site", "cross-site"}},
           {{"Host", "127.0.0.1:8080"}, {"Sec-Fetch-Site", "same-site"}},
           {{"Origin", "http://127.0.0.1:8080"}}}) {
    HttpRequest req{http::verb::post, "/v1/timers", 11};
    for (const auto& [name, value] : fields) req.insert(name, value);
    Result<std::optional<std::string>> r = guard->CheckOrigin(req);
    ASSERT_FALSE(r.ok()) << fields.back().second;
    EXPECT_EQ(r.status().reason(), "origin_not_allowed");
    EXPECT_EQ(HttpStatusOf(r.status()), 403);
  }
  EXPECT_FALSE(RequestGuard::Make({.allow_origins = {"ops.example.com"}}).ok());
  EXPECT_FALSE(RequestGuard::Make({.allow_origins = {"https://ops.example.com/path"}}).ok());
}

TEST(RequestGuardTest, ABodyMustBeJson) {
  for (const char* type : {"application/json", "Application/JSON; charset=utf-8", " application/json "}) {
    EXPECT_TRUE(RequestGuard::CheckContentType(Head({{"Content-Type", type}}), true).ok()) << type;
  }
  for (const char* type : {"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; b=x",
                           "application/jsonx", "application/json-seq", "text/json"}) {
    Status s = RequestGuard::CheckContentType(Head({{"Content-Type", type}}), true);
    EXPECT_EQ(Reason(s), "unsupported_media_type") << type;
    EXPECT_EQ(HttpStatusOf(s), 415);
  }
  EXPECT_EQ(Reason(RequestGuard::CheckContentType(Head({}), true)), "unsupported_media_type");
  EXPECT_TRUE(RequestGuard::CheckContentType(Head({{"Content-Type", "text/plain"}}), false).ok());
}

}  // namespace
}  // namespace tickwheel::server
