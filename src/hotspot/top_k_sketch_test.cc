#include "src/hotspot/top_k_sketch.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numbers>
#include <set>
#include <string>
#include <vector>

#include "src/common/random.h"

namespace shoal::hotspot {
namespace {

constexpr uint64_t kSecond = 1'000'000;

// Draws key indexes 0..n-1 with P(i) proportional to 1 / (i + 1)^s.
class ZipfKeys {
 public:
  ZipfKeys(size_t n, double s, uint64_t seed) : random_(seed) {
    double sum = 0;
    for (size_t i = 0; i < n; ++i) {
      sum += 1 / std::pow(static_cast<double>(i + 1), s);
      cdf_.push_back(sum);
    }
  }
  // The probability of index i.
  double Share(size_t i) const { return (cdf_[i] - (i == 0 ? 0 : cdf_[i - 1])) / cdf_.back(); }
  size_t Next() {
    const double u = random_.NextDouble() * cdf_.back();
    return std::min<size_t>(std::upper_bound(cdf_.begin(), cdf_.end(), u) - cdf_.begin(),
                            cdf_.size() - 1);
  }

 private:
  Random random_;
  std::vector<double> cdf_;
};

// The exact decayed rate of every key of a stream, as the sketch defines it.
class ExactRates {
 public:
  explicit ExactRates(uint64_t half_life) : half_life_(half_life) {}
  void Add(const std::string& key, uint64_t now) { writes_[key].push_back(now); }
  std::map<std::string, double> At(uint64_t now) const {
    const double h = static_cast<double>(half_life_);
    std::map<std::string, double> rates;
    for (const auto& [key, times] : writes_) {
      double count = 0;
      for (uint64_t t : times) count += std::exp2(-static_cast<double>(now - t) / h);
      rates[key] = count * std::numbers::ln2 / (h / 1e6);
    }
    return rates;
  }

 private:
  uint64_t half_life_;
  std::map<std::string, std::vector<uint64_t>> writes_;
};

std::string Key(size_t i) { return fmt::format("key-{}", i); }

TEST(TopKSketchTest, HeavyHittersOfAZipfStreamAreFound) {
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    SCOPED_TRACE(fmt::format("seed {}", seed));
    TopKSketch sketch(
        {.capacity = 64, .half_life_micros = 10 * kSecond, .min_writes_per_second = 0.01});
    ZipfKeys zipf(10'000, 1.2, seed);
    uint64_t now = 0;
    for (int i = 0; i < 50'000; ++i) {
      now += 100;  // 10,000 writes per second
      sketch.Add(Key(zipf.Next()), now);
    }
    ASSERT_TRUE(sketch.CheckInvariants().ok()) << sketch.CheckInvariants();
    const std::vector<HotKey> top = sketch.Top(5, now);
    ASSERT_EQ(top.size(), 5u);
    // The three hottest in order, and the five hottest as a set.
    for (size_t i = 0; i < 3; ++i) EXPECT_EQ(top[i].key, Key(i)) << i;
    std::set<std::string> keys;
    for (const HotKey& hot : top) keys.insert(hot.key);
    EXPECT_EQ(keys, (std::set<std::string>{Key(0), Key(1), Key(2), Key(3), Key(4)}));
    // The hottest key's rate after 5 s = half a half-life: 1 - 2^-0.5 of its steady value.
    const double expected = zipf.Share(0) * 10'000 * (1 - std::exp2(-0.5));
    EXPECT_NEAR(top[0].writes_per_second, expected, 0.1 * expected);
  }
}

TEST(TopKSketchTest, ErrorBoundHoldsAgainstExactDecayedRates) {
  // A short half-life, so that the stream spans many landmark moves (every 32 half-lives).
  constexpr uint64_t kHalfLife = 2'000;
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    SCOPED_TRACE(fmt::format("seed {}", seed));
    TopKSketch sketch({.capacity = 16, .half_life_micros = kHalfLife, .min_writes_per_second = 0});
    ExactRates exact(kHalfLife);
    ZipfKeys zipf(200, 0.8, seed);
    Random gaps(seed * 7919);
    uint64_t now = 0;
    for (int i = 0; i < 20'000; ++i) {
      now += gaps.Uniform(20);
      const std::string key = Key(zipf.Next());
      sketch.Add(key, now);
      exact.Add(key, now);
      if (i % 1000 != 999) continue;
      ASSERT_TRUE(sketch.CheckInvariants().ok()) << sketch.CheckInvariants();
      const auto rates = exact.At(now);
      double total = 0;
      for (const auto& [key, rate] : rates) total += rate;
      const std::vector<HotKey> top = sketch.Top(16, now);
      std::set<std::string> counted;
      for (const HotKey& hot : top) {
        counted.insert(hot.key);
        const double truth = rates.contains(hot.key) ? rates.at(hot.key) : 0;
        const double slack = 1e-6 * total;
        EXPECT_LE(truth, hot.writes_per_second + slack) << hot.key << " at " << i;
        EXPECT_GE(truth, hot.writes_per_second - hot.error_per_second - slack)
            << hot.key << " at " << i;
        EXPECT_LE(hot.error_per_second, total / 16 + slack) << hot.key << " at " << i;
      }
      // Every key with more than 1/capacity of the decayed stream is counted.
      for (const auto& [key, rate] : rates) {
        if (rate > total / 16 * (1 + 1e-6)) {
          EXPECT_TRUE(counted.contains(key)) << key << " at " << i;
        }
      }
    }
  }
}

TEST(TopKSketchTest, KeyThatCoolsFallsOutAfterAFewHalfLives) {
  TopKSketch sketch(
      {.capacity = 64, .half_life_micros = 10 * kSecond, .min_writes_per_second = 0.01});
  // 0-20 s: "hot" at 100/s and "warm" at 10/s; 20-200 s: only "warm".
  for (uint64_t now = 0; now < 200 * kSecond; now += 10'000) {
    if (now < 20 * kSecond) sketch.Add("hot", now);
    if (now % 100'000 == 0) sketch.Add("warm", now);
    if (now == 20 * kSecond - 10'000) {
      // Two half-lives of writing: 3/4 of the steady rate.
      const auto top = sketch.Top(2, now);
      ASSERT_EQ(top.size(), 2u);
      EXPECT_EQ(top[0].key, "hot");
      EXPECT_NEAR(top[0].writes_per_second, 100 * 0.75, 5);
      EXPECT_EQ(top[1].key, "warm");
    }
    if (now == 60 * kSecond) {
      // Four half-lives later "hot" is down to a sixteenth; "warm" leads at about its rate.
      const auto top = sketch.Top(2, now);
      ASSERT_EQ(top.size(), 2u);
      EXPECT_EQ(top[0].key, "warm");
      EXPECT_NEAR(top[0].writes_per_second, 10, 0.5);
      EXPECT_EQ(top[1].key, "hot");
      EXPECT_LT(top[1].writes_per_second, 100.0 / 16);
    }
  }
  // Eighteen half-lives after its last write "hot" is below the floor and no longer reported.
  const auto top = sketch.Top(2, 200 * kSecond);
  ASSERT_EQ(top.size(), 1u);
  EXPECT_EQ(top[0].key, "warm");
  // Once nothing is written at all, nothing is reported.
  EXPECT_TRUE(sketch.Top(2, 400 * kSecond).empty());
  ASSERT_TRUE(sketch.CheckInvariants().ok()) << sketch.CheckInvariants();
}

TEST(TopKSketchTest, CapacityIsNeverExceeded) {
  TopKSketch sketch({.capacity = 8, .half_life_micros = kSecond, .min_writes_per_second = 0});
  Random random(42);
  for (uint64_t i = 0; i < 5'000; ++i) {
    sketch.Add(Key(random.Uniform(1'000)), i * 50);
    ASSERT_LE(sketch.size(), 8u) << i;
    ASSERT_TRUE(sketch.CheckInvariants().ok()) << sketch.CheckInvariants() << " after " << i;
  }
  EXPECT_EQ(sketch.size(), 8u);
  EXPECT_EQ(sketch.Top(100, 5'000 * 50).size(), 8u);
}

TEST(TopKSketchTest, TopIsOrderedByRateThenKey) {
  TopKSketch sketch({.capacity = 4, .half_life_micros = kSecond, .min_writes_per_second = 0});
  for (const char* key : {"b", "a", "c", "c"}) sketch.Add(key, 0);
  const auto top = sketch.Top(3, 0);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0].key, "c");
  EXPECT_EQ(top[1].key, "a");
  EXPECT_EQ(top[2].key, "b");
  EXPECT_DOUBLE_EQ(top[0].writes_per_second, 2 * top[1].writes_per_second);
  EXPECT_EQ(top[0].error_per_second, 0);
  EXPECT_EQ(sketch.Top(1, 0).size(), 1u);
}

}  // namespace
}  // namespace shoal::hotspot
