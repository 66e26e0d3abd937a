#include "src/partition/key_pattern.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace shoal::partition {
namespace {

TEST(KeyPatternTest, SequentialKeysAreConsecutiveBigEndian) {
  auto set = KeySet::Generate({.pattern = KeyPattern::kSequential, .count = 300});
  ASSERT_TRUE(set.ok());
  ASSERT_EQ(set->size(), 300u);
  for (size_t i = 1; i < set->size(); ++i) {
    EXPECT_LT(set->key(i - 1).raw, set->key(i).raw);  // raw order is numeric order
  }
  EXPECT_EQ(DecodeBigEndian64(set->key(299).raw.data()), 299u);
  EXPECT_EQ(set->key(5).point, PointOf(CollectionId(1), set->key(5).raw));
  EXPECT_EQ(set->total_bytes(), 300u * 100u);
}

TEST(KeyPatternTest, IdentityHashUsesTheIntegerItself) {
  auto set = KeySet::Generate({.hash = KeyHash::kIdentity, .count = 10});
  ASSERT_TRUE(set.ok());
  EXPECT_EQ(set->key(7).point, Point(7));
}

TEST(KeyPatternTest, UniformKeysAreDistinctAndSeeded) {
  auto a = KeySet::Generate({.pattern = KeyPattern::kUniform, .count = 5000, .seed = 3});
  auto b = KeySet::Generate({.pattern = KeyPattern::kUniform, .count = 5000, .seed = 3});
  ASSERT_TRUE(a.ok() && b.ok());
  std::set<std::string_view> distinct;
  for (size_t i = 0; i < a->size(); ++i) {
    distinct.insert(a->key(i).raw);
    ASSERT_EQ(a->key(i).point, b->key(i).point);
  }
  EXPECT_EQ(distinct.size(), 5000u);
}

TEST(KeyPatternTest, ZipfianSizesAreSkewedAndBounded) {
  auto set =
      KeySet::Generate({.pattern = KeyPattern::kZipfian, .count = 20000, .record_bytes = 10});
  ASSERT_TRUE(set.ok());
  const auto& bytes = set->bytes();
  const uint32_t smallest = *std::min_element(bytes.begin(), bytes.end());
  const uint32_t largest = *std::max_element(bytes.begin(), bytes.end());
  EXPECT_EQ(smallest, 10u);
  EXPECT_LE(largest, 10u * kZipfRanks);
  const auto ones = std::count(bytes.begin(), bytes.end(), 10u);
  EXPECT_GT(ones, static_cast<long>(bytes.size() / 10));  // rank 1 is the most frequent
}

TEST(KeyPatternTest, RejectsBadOptions) {
  EXPECT_FALSE(KeySet::Generate({.count = 0}).ok());
  EXPECT_FALSE(KeySet::Generate({.record_bytes = 0}).ok());
  EXPECT_FALSE(ParseKeyPattern("gaussian").ok());
  EXPECT_FALSE(ParseKeyHash("md5").ok());
}

}  // namespace
}  // namespace shoal::partition
