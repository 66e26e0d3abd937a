#include "src/cluster/bucket_range.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

namespace shoal::cluster {
namespace {

TEST(BucketRangeTest, FullCoversTheWholeSpace) {
  const BucketRange full = BucketRange::Full();
  EXPECT_EQ(full.begin(), 0u);
  EXPECT_TRUE(full.end_is_max());
  EXPECT_EQ(full.last(), UINT64_MAX);
  EXPECT_EQ(full.width_minus_one(), UINT64_MAX);
  EXPECT_TRUE(full.Contains(Point(0)));
  EXPECT_TRUE(full.Contains(Point(UINT64_MAX)));
  EXPECT_EQ(full.DebugString(), "[0x0000000000000000, 2^64)");
}

TEST(BucketRangeTest, MakeRejectsEmptyAndReversedRanges) {
  EXPECT_FALSE(BucketRange::Make(5, 5).ok());
  EXPECT_FALSE(BucketRange::Make(6, 5).ok());
  auto range = BucketRange::Make(5, 6);
  ASSERT_TRUE(range.ok());
  EXPECT_TRUE(range->Contains(Point(5)));
  EXPECT_FALSE(range->Contains(Point(6)));
  EXPECT_FALSE(range->Contains(Point(4)));
  EXPECT_EQ(range->width_minus_one(), 0u);
}

TEST(BucketRangeTest, SplitAndMergeAtTheTopOfTheSpace) {
  const BucketRange full = BucketRange::Full();
  auto halves = full.SplitAt(full.Midpoint());
  ASSERT_TRUE(halves.ok());
  EXPECT_EQ(full.Midpoint(), uint64_t{1} << 63);
  EXPECT_EQ(halves->first.end(), uint64_t{1} << 63);
  EXPECT_FALSE(halves->first.end_is_max());
  EXPECT_TRUE(halves->second.end_is_max());
  EXPECT_TRUE(halves->first.IsFollowedBy(halves->second));
  EXPECT_FALSE(halves->second.IsFollowedBy(halves->first));
  auto merged = halves->first.MergeWith(halves->second);
  ASSERT_TRUE(merged.ok());
  EXPECT_EQ(*merged, full);
  EXPECT_FALSE(halves->second.MergeWith(halves->first).ok());
}

TEST(BucketRangeTest, SplitRejectsPointsOutside) {
  auto range = BucketRange::Make(10, 20);
  ASSERT_TRUE(range.ok());
  EXPECT_FALSE(range->SplitAt(10).ok());
  EXPECT_FALSE(range->SplitAt(20).ok());
  EXPECT_FALSE(range->SplitAt(3).ok());
  EXPECT_TRUE(range->SplitAt(11).ok());
  EXPECT_FALSE(BucketRange::ToMax(7).SplitAt(7).ok());
  EXPECT_TRUE(BucketRange::ToMax(7).SplitAt(UINT64_MAX).ok());
}

RC_GTEST_PROP(BucketRangeProperty, SplitPartitionsThePoints, (uint64_t a, uint64_t b, uint64_t p)) {
  const bool to_max = *rc::gen::arbitrary<bool>();
  const uint64_t begin = std::min(a, b);
  const uint64_t end = std::max(a, b);
  RC_PRE(to_max || begin < end);
  const BucketRange range = to_max ? BucketRange::ToMax(begin) : *BucketRange::Make(begin, end);
  RC_PRE(range.width_minus_one() > 0);
  const uint64_t at = range.Midpoint();
  auto halves = range.SplitAt(at);
  RC_ASSERT(halves.ok());
  RC_ASSERT(range.Contains(Point(p)) ==
            (halves->first.Contains(Point(p)) || halves->second.Contains(Point(p))));
  RC_ASSERT(!(halves->first.Contains(Point(p)) && halves->second.Contains(Point(p))));
  RC_ASSERT(*halves->first.MergeWith(halves->second) == range);
}

}  // namespace
}  // namespace shoal::cluster
