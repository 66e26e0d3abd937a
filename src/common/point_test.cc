#include "src/common/point.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <string>

namespace shoal {
namespace {

// Golden values pin the point function: a change here would re-place every stored document.
TEST(PointTest, GoldenValuesAreStable) {
  EXPECT_EQ(PointOf(CollectionId(0), "").value(), 0x2d06800538d394c2ULL);
  EXPECT_EQ(PointOf(CollectionId(7), "user:42").value(),
            PointOf(CollectionId(7), "user:42").value());
  EXPECT_NE(PointOf(CollectionId(7), "user:42"), PointOf(CollectionId(8), "user:42"));
}

TEST(PointTest, HashU64IsLittleEndianEncodingOfValue) {
  const char le[8] = {1, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(HashU64(1, 99), Hash64(std::string_view(le, 8), 99));
}

RC_GTEST_PROP(PointTest, BigEndianRoundTripsAndPreservesOrder, (uint64_t a, uint64_t b)) {
  char ea[8];
  char eb[8];
  EncodeBigEndian64(a, ea);
  EncodeBigEndian64(b, eb);
  RC_ASSERT(DecodeBigEndian64(ea) == a);
  const int cmp = std::string(ea, 8).compare(std::string(eb, 8));
  RC_ASSERT((cmp < 0) == (a < b));
  RC_ASSERT((cmp == 0) == (a == b));
}

}  // namespace
}  // namespace shoal
