#include "tools/shoal/security_flags.h"

#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "src/security/auth_throttle.h"

namespace shoal::tools {
namespace {

// Parses `args` as the options of a server command: OK, or the parser's error message.
std::string Parse(const std::string& args, ServerSecurityFlags* flags) {
  CLI::App app("test");
  AddServerSecurityOptions(&app, flags);
  try {
    app.parse(args, /*program_name_included=*/false);
  } catch (const CLI::ParseError& error) {
    return error.what();
  }
  return "OK";
}

TEST(SecurityFlagsTest, PasswordLimitsReachTheAuthenticatorOptions) {
  ServerSecurityFlags flags;
  ASSERT_EQ(Parse("--insecure --max-password-failures-per-address 3 --password-block-seconds 7 "
                  "--max-password-failures-per-user 5 --max-password-verifications 2",
                  &flags),
            "OK");
  auto security = ServerSecurity(flags);
  ASSERT_TRUE(security.ok()) << security.status();
  const security::AuthenticatorOptions& options = security->authentication;
  EXPECT_EQ(options.throttle.max_failures_per_address, 3u);
  EXPECT_EQ(options.throttle.backoff, std::chrono::seconds(7));
  EXPECT_EQ(options.throttle.max_failures_per_user, 5u);
  EXPECT_EQ(options.max_concurrent_verifications, 2u);

  // With TLS too, and shoal local hands the same values on.
  flags.insecure = false;
  flags.certs_dir = "/nonexistent";
  security = ServerSecurity(flags);
  ASSERT_TRUE(security.ok()) << security.status();
  EXPECT_EQ(security->authentication.throttle.max_failures_per_address, 3u);
  const std::vector<std::string> expected = {
      "--max-password-failures-per-address", "3", "--password-block-seconds",     "7",
      "--max-password-failures-per-user",    "5", "--max-password-verifications", "2"};
  EXPECT_EQ(AuthLimitArgs(flags.auth), expected);
  ServerSecurityFlags child;
  std::string joined;
  for (const std::string& arg : AuthLimitArgs(flags.auth)) joined += arg + " ";
  ASSERT_EQ(Parse("--insecure " + joined, &child), "OK");
  EXPECT_EQ(child.auth.max_failures_per_address, 3);
  EXPECT_EQ(child.auth.max_verifications, 2);
}

TEST(SecurityFlagsTest, DefaultsAreTheDocumentedLimits) {
  ServerSecurityFlags flags;
  ASSERT_EQ(Parse("--insecure", &flags), "OK");
  auto security = ServerSecurity(flags);
  ASSERT_TRUE(security.ok()) << security.status();
  const security::AuthenticatorOptions& options = security->authentication;
  EXPECT_EQ(options.throttle.max_failures_per_address, security::kDefaultMaxFailuresPerAddress);
  EXPECT_EQ(options.throttle.max_failures_per_user, security::kDefaultMaxFailuresPerUser);
  EXPECT_EQ(options.throttle.backoff, security::kDefaultThrottleBackoff);
  EXPECT_EQ(options.throttle.window, security::kDefaultFailureWindow);
  EXPECT_EQ(options.max_concurrent_verifications, security::DefaultConcurrentVerifications());
}

TEST(SecurityFlagsTest, ZeroOrNegativeLimitsAreRefusedNamingTheFlag) {
  for (const std::string flag :
       {"--max-password-failures-per-address", "--password-block-seconds",
        "--max-password-failures-per-user", "--max-password-verifications"}) {
    for (const std::string value : {"0", "-1"}) {
      ServerSecurityFlags flags;
      const std::string error = Parse("--insecure " + flag + " " + value, &flags);
      EXPECT_NE(error.find(flag), std::string::npos) << flag << " " << value << ": " << error;
      EXPECT_NE(error.find("not in range"), std::string::npos) << error;
    }
  }
  // The same values set without the parser (a caller filling the struct) are refused too.
  ServerSecurityFlags flags{.insecure = true};
  flags.auth.block_seconds = 0;
  const Status refused = ServerSecurity(flags).status();
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("--password-block-seconds must be at least 1, not 0"),
            std::string_view::npos)
      << refused;
  flags.auth.block_seconds = 1;
  flags.auth.max_verifications = -3;
  EXPECT_NE(ServerSecurity(flags).status().message().find("--max-password-verifications"),
            std::string_view::npos);
}

}  // namespace
}  // namespace shoal::tools
