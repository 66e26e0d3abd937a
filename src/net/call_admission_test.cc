#include "src/net/call_admission.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace shoal::net {
namespace {

TEST(PeerHostTest, DropsTheSchemeAndThePort) {
  EXPECT_EQ(PeerHost("ipv4:127.0.0.1:5000"), "127.0.0.1");
  EXPECT_EQ(PeerHost("ipv6:[::1]:5000"), "::1");
  EXPECT_EQ(PeerHost("ipv6:[fe80::1%25eth0]:80"), "fe80::1%25eth0");
  EXPECT_EQ(PeerHost("unix:/tmp/socket"), "unix:/tmp/socket");
  EXPECT_EQ(PeerHost(""), "");
}

TEST(CallAdmissionTest, PerAddressLimitAtItsValueAndOnePast) {
  CallAdmission admission({.max_calls = 100, .max_calls_per_address = 3});
  std::vector<CallAdmission::Ticket> held;
  for (int port = 1; port <= 3; ++port) {
    auto ticket = admission.Admit("ipv4:10.0.0.1:" + std::to_string(port));
    ASSERT_TRUE(ticket.ok()) << ticket.status();
    held.push_back(*ticket);
  }
  // Another connection of the same host is one past its limit; another host is not.
  auto refused = admission.Admit("ipv4:10.0.0.1:9");
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(MessageOf(refused.status()),
            "client address 10.0.0.1 already has 3 calls in flight; the limit is 3 per client "
            "address (docs/limits.md)");
  EXPECT_TRUE(admission.Admit("ipv4:10.0.0.2:9").ok());
  EXPECT_EQ(admission.calls_from("10.0.0.1"), 3u);
  // A finished call gives its slot back.
  held.pop_back();
  EXPECT_EQ(admission.calls_from("10.0.0.1"), 2u);
  EXPECT_TRUE(admission.Admit("ipv4:10.0.0.1:9").ok());
}

TEST(CallAdmissionTest, ServerLimitAtItsValueAndOnePast) {
  CallAdmission admission({.max_calls = 2, .max_calls_per_address = 100});
  auto first = admission.Admit("ipv4:10.0.0.1:1");
  auto second = admission.Admit("ipv4:10.0.0.2:1");
  ASSERT_TRUE(first.ok() && second.ok());
  auto refused = admission.Admit("ipv4:10.0.0.3:1");
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(MessageOf(refused.status()),
            "this server already handles 2 calls; the limit is 2 calls in flight per server "
            "(docs/limits.md)");
  EXPECT_EQ(admission.calls(), 2u);
  // Copies of a ticket hold one slot, given back with the last copy.
  CallAdmission::Ticket copy = *first;
  first = CallAdmission::Ticket();
  EXPECT_EQ(admission.calls(), 2u);
  copy = CallAdmission::Ticket();
  EXPECT_EQ(admission.calls(), 1u);
  EXPECT_TRUE(admission.Admit("ipv4:10.0.0.3:1").ok());
}

TEST(CallAdmissionTest, ZeroLimitsAreInvalid) {
  EXPECT_TRUE(ValidateCallLimits({}).ok());
  EXPECT_EQ(ValidateCallLimits({.max_calls = 0, .max_calls_per_address = 1}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateCallLimits({.max_calls = 1, .max_calls_per_address = 0}).code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace shoal::net
