// RequestRates: per-bucket request rates decayed by half-life, folded at each load report.

#include "src/node/request_rates.h"

#include <gtest/gtest.h>

#include <cmath>

namespace shoal::node {
namespace {

constexpr BucketId kB1(1);
constexpr BucketId kB2(2);
constexpr transport::Micros kSecond = 1'000'000;
constexpr transport::Micros kHalfLife = 10 * kSecond;

const absl::flat_hash_set<BucketId> kBoth = {kB1, kB2};

TEST(RequestRatesTest, ASteadyLoadConvergesToItsRate) {
  RequestRates rates(0, kHalfLife);
  transport::Micros now = 0;
  for (int report = 0; report < 100; ++report) {  // 100 s at 50 reads/s of b1, none of b2
    rates.Record(kB1, 50);
    now += kSecond;
    rates.Fold(now, kBoth);
    ASSERT_TRUE(rates.CheckInvariants().ok());
  }
  EXPECT_NEAR(rates.PerSecond(kB1), 50.0, 0.1);  // 10 half-lives: within 2^-10 of the rate
  EXPECT_EQ(rates.PerSecond(kB2), 0.0);
}

TEST(RequestRatesTest, TheWeightOfReadsHalvesEveryHalfLifeWhateverTheReportInterval) {
  // The same reads folded at 1 s and at 5 s intervals end at the same rate once reads stop.
  RequestRates often(0, kHalfLife);
  RequestRates seldom(0, kHalfLife);
  for (int second = 1; second <= 20; ++second) {
    often.Record(kB1, 100);
    seldom.Record(kB1, 100);
    often.Fold(second * kSecond, kBoth);
    if (second % 5 == 0) seldom.Fold(second * kSecond, kBoth);
  }
  // Rates at a constant load agree (the EMA of a constant is the constant's approach).
  EXPECT_NEAR(often.PerSecond(kB1), seldom.PerSecond(kB1), 1.0);
  const double before = often.PerSecond(kB1);
  often.Fold(20 * kSecond + kHalfLife, kBoth);  // one half-life without reads
  EXPECT_NEAR(often.PerSecond(kB1), before / 2, 1e-9);
}

TEST(RequestRatesTest, ReadsAtTheInstantOfAFoldWaitForTheNext) {
  RequestRates rates(5 * kSecond, kHalfLife);
  rates.Record(kB1, 30);
  rates.Fold(5 * kSecond, kBoth);  // no time passed: nothing folded, nothing lost
  EXPECT_EQ(rates.PerSecond(kB1), 0.0);
  rates.Fold(6 * kSecond, kBoth);
  const double alpha = 1.0 - std::exp2(-0.1);  // 1 s of a 10 s half-life
  EXPECT_NEAR(rates.PerSecond(kB1), alpha * 30.0, 1e-9);
  ASSERT_TRUE(rates.CheckInvariants().ok());
}

TEST(RequestRatesTest, ABucketNoLongerServedIsForgotten) {
  RequestRates rates(0, kHalfLife);
  rates.Record(kB1, 10);
  rates.Record(kB2, 10);
  rates.Fold(kSecond, kBoth);
  EXPECT_GT(rates.PerSecond(kB2), 0.0);
  rates.Record(kB2, 10);  // counted before it left
  rates.Fold(2 * kSecond, {kB1});
  EXPECT_EQ(rates.PerSecond(kB2), 0.0);
  EXPECT_GT(rates.PerSecond(kB1), 0.0);
  // Back again: it starts from nothing, not from the reads counted before it left.
  rates.Fold(3 * kSecond, kBoth);
  EXPECT_EQ(rates.PerSecond(kB2), 0.0);
}

}  // namespace
}  // namespace shoal::node
