// SPDX-License-Identifier: Apache-2.0
#include "client.h"

#include <gtest/gtest.h>

namespace tickwheel::app {
namespace {

std::string WithPort(const std::string& server) {
  ClientFlags flags;
  flags.server = server;
  return flags.ServerWithPort();
}

TEST(ClientFlagsTest, AServerWithoutAPortGetsTheDefault8080) {
  // `--server 127.0.0.1` went to port 80.
  EXPECT_EQ(WithPort("127.0.0.1"), "127.0.0.1:8080");
  EXPECT_EQ(WithPort("localhost"), "localhost:8080");
  EXPECT_EQ(WithPort("https://timers.example.com"), "https://timers.example.com:8080");
  EXPECT_EQ(WithPort("http://h/"), "http://h:8080");
  EXPECT_EQ(WithPort("[::1]"), "[::1]:8080");
  EXPECT_EQ(WithPort("127.0.0.1:9000"), "127.0.0.1:9000");
  EXPECT_EQ(WithPort("https://h:443"), "https://h:443");
  EXPECT_EQ(WithPort("[::1]:9000"), "[::1]:9000");
}

TEST(TimerPathTest, ChecksTheIdAsTheServerDoesAndEncodesIt) {
  EXPECT_EQ(TimerPath("order-42.a_b~c"), "/v1/timers/order-42.a_b~c");
  EXPECT_EQ(TimerPath("x", ":retry"), "/v1/timers/x:retry");
  for (const char* bad : {"", "a b/c", "a?b", "a%2Fb", "a#b", "ä"}) {
    EXPECT_EQ(TimerPath(bad), std::nullopt) << bad;
  }
  EXPECT_EQ(TimerPath(std::string(129, 'a')), std::nullopt);
  EXPECT_EQ(PercentEncode("a b/c?d%"), "a%20b%2Fc%3Fd%25");
}

}  // namespace
}  // namespace tickwheel::app
