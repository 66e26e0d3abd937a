#include "src/security/auth_throttle.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace shoal::security {
namespace {

using std::chrono::seconds;

// A throttle on a clock the test moves.
class AuthThrottleTest : public testing::Test {
 protected:
  AuthThrottleOptions Options() {
    return {.max_failures_per_address = 3,
            .max_failures_per_user = 5,
            .window = seconds(60),
            .backoff = seconds(30),
            .max_tracked = 4,
            .now = [this] { return now_; }};
  }

  ThrottleClock::time_point now_ = ThrottleClock::time_point() + std::chrono::hours(1);
};

TEST_F(AuthThrottleTest, AddressIsBlockedAtItsLimitForTheBackoff) {
  AuthThrottle throttle(Options());
  for (int i = 0; i < 2; ++i) {
    throttle.RecordAddressFailure("10.0.0.1");
    EXPECT_TRUE(throttle.CheckAddress("10.0.0.1").ok());
  }
  throttle.RecordAddressFailure("10.0.0.1");
  const Status blocked = throttle.CheckAddress("10.0.0.1");
  EXPECT_EQ(blocked.code(), StatusCode::kUnauthenticated);
  EXPECT_NE(blocked.message().find("from client address 10.0.0.1: the limit is 3 per 60 s"),
            std::string_view::npos)
      << blocked;
  EXPECT_NE(blocked.message().find("retry in 30 s"), std::string_view::npos) << blocked;
  // Other addresses and the user names are not affected.
  EXPECT_TRUE(throttle.CheckAddress("10.0.0.2").ok());
  EXPECT_TRUE(throttle.CheckUser("10.0.0.1").ok());

  // Refused attempts neither count nor extend the block.
  now_ += seconds(20);
  throttle.RecordAddressFailure("10.0.0.1");
  const Status later = throttle.CheckAddress("10.0.0.1");
  EXPECT_NE(later.message().find("retry in 10 s"), std::string_view::npos) << later;
  now_ += seconds(10);
  EXPECT_TRUE(throttle.CheckAddress("10.0.0.1").ok());
  // The window starts afresh after a block.
  throttle.RecordAddressFailure("10.0.0.1");
  EXPECT_TRUE(throttle.CheckAddress("10.0.0.1").ok());
}

TEST_F(AuthThrottleTest, FailuresOutsideTheWindowDoNotCount) {
  AuthThrottle throttle(Options());
  throttle.RecordAddressFailure("10.0.0.1");
  throttle.RecordAddressFailure("10.0.0.1");
  now_ += seconds(61);
  throttle.RecordAddressFailure("10.0.0.1");
  throttle.RecordAddressFailure("10.0.0.1");
  EXPECT_TRUE(throttle.CheckAddress("10.0.0.1").ok());
  now_ += seconds(1);
  throttle.RecordAddressFailure("10.0.0.1");
  EXPECT_EQ(throttle.CheckAddress("10.0.0.1").code(), StatusCode::kUnauthenticated);
}

TEST_F(AuthThrottleTest, UserNameIsBlockedAtItsOwnLimit) {
  AuthThrottle throttle(Options());
  for (int i = 0; i < 4; ++i) throttle.RecordUserFailure("alice");
  EXPECT_TRUE(throttle.CheckUser("alice").ok());
  throttle.RecordUserFailure("alice");
  const Status blocked = throttle.CheckUser("alice");
  EXPECT_EQ(blocked.code(), StatusCode::kUnauthenticated);
  EXPECT_NE(blocked.message().find("for user 'alice': the limit is 5 per 60 s"),
            std::string_view::npos)
      << blocked;
  EXPECT_TRUE(throttle.CheckUser("bob").ok());
  EXPECT_TRUE(throttle.CheckAddress("alice").ok());
}

TEST_F(AuthThrottleTest, TablesAreBoundedAndEvictBlockedKeysLast) {
  AuthThrottle throttle(Options());
  for (int i = 0; i < 3; ++i) throttle.RecordAddressFailure("attacker");
  ASSERT_FALSE(throttle.CheckAddress("attacker").ok());
  for (int i = 0; i < 100; ++i) {
    now_ += std::chrono::milliseconds(10);
    throttle.RecordAddressFailure("10.1.0." + std::to_string(i));
    EXPECT_LE(throttle.TEST_tracked_addresses(), 4u);
  }
  EXPECT_FALSE(throttle.CheckAddress("attacker").ok());
  // Keys idle for a window go first once the table is full.
  now_ += seconds(61);
  for (int i = 0; i < 4; ++i) throttle.RecordUserFailure("u" + std::to_string(i));
  throttle.RecordUserFailure("late");
  EXPECT_LE(throttle.TEST_tracked_users(), 4u);
}

TEST(VerificationSlotsTest, RefusesPastTheBoundNamingIt) {
  VerificationSlots slots(2, std::chrono::milliseconds(0));
  ASSERT_TRUE(slots.Acquire().ok());
  ASSERT_TRUE(slots.Acquire().ok());
  const Status busy = slots.Acquire();
  EXPECT_EQ(busy.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(busy.message().find("the limit is 2 at once per process"), std::string_view::npos)
      << busy;
  slots.Release();
  EXPECT_TRUE(slots.Acquire().ok());
  EXPECT_GE(DefaultConcurrentVerifications(), 1u);
  EXPECT_LE(DefaultConcurrentVerifications(), kMaxConcurrentVerifications);
}

}  // namespace
}  // namespace shoal::security
