// SPDX-License-Identifier: Apache-2.0
// Uses the installed C++ client (tickwheel::client): verifies the Standard
// Webhooks specification's example and makes a client; no server needed.
#include <tickwheel/client.h>
#include <tickwheel/webhook.h>

#include <boost/json/serialize.hpp>
#include <chrono>
#include <cstdio>

int main() {
  namespace tw = tickwheel::client;
  const boost::json::value delivery = tw::VerifyWebhook(
      {"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"},
      {{"webhook-id", "msg_p5jXN8AQM9LWM0D4loKWxJek"},
       {"webhook-timestamp", "1614265330"},
       {"webhook-signature", "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="}},
      R"({"test": 2432232314})", tw::kDefaultWebhookTolerance,
      std::chrono::system_clock::time_point(std::chrono::seconds(1614265330)));
  tw::Client client({.server = "http://127.0.0.1:8080", .token = ""});
  const std::string id = tw::NewId();
  std::printf("verified %s, new id %s\n", boost::json::serialize(delivery).c_str(), id.c_str());
  return delivery.at("test") == 2432232314 && id.size() == 32 ? 0 : 1;
}
