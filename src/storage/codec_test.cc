#include "src/storage/codec.h"

#include <gtest/gtest.h>

#include "src/common/random.h"
#include "src/storage/errors.h"
#include "src/storage/point_range.h"

namespace shoal::storage {
namespace {

Document RandomDocument(Random& rng) {
  Document d;
  d.collection = CollectionId(static_cast<uint32_t>(rng.Range(kMinCollectionId, 1000)));
  const size_t pk_size = rng.Range(1, 40);
  for (size_t i = 0; i < pk_size; ++i) d.primary_key.push_back(static_cast<char>(rng.Uniform(256)));
  d.version = rng.Next64();
  d.tombstone = rng.OneIn(4);
  if (!d.tombstone) d.body = "{\"x\":" + std::to_string(rng.Uniform(1000)) + "}";
  return d;
}

TEST(CodecTest, DocumentEncodeDecodeEncode) {
  Random rng(42);
  for (int i = 0; i < 2000; ++i) {
    const Document d = RandomDocument(rng);
    const std::string bytes = EncodeDocument(d);
    auto decoded = DecodeDocument(bytes);
    ASSERT_TRUE(decoded.ok()) << decoded.status() << " seed=42 i=" << i;
    EXPECT_EQ(*decoded, d);
    EXPECT_EQ(EncodeDocument(*decoded), bytes);
  }
}

TEST(CodecTest, StoredKeyIsPointFirstAndOrdered) {
  const std::string a = EncodeStoredKey(Point(1), CollectionId(9), "zzz");
  const std::string b = EncodeStoredKey(Point(2), CollectionId(1), "aaa");
  EXPECT_LT(a, b);  // the point decides before the collection and the key
  auto k = DecodeStoredKey(a);
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(k->point, Point(1));
  EXPECT_EQ(k->collection, CollectionId(9));
  EXPECT_EQ(k->primary_key, "zzz");
  EXPECT_LT(EncodeStoredKey(Point(~0ull), CollectionId(kMaxCollectionId), std::string(100, '\xff')),
            std::string(kMaxStoredKeyBound));
}

TEST(CodecTest, StoredValueRoundTrip) {
  const std::string v = EncodeStoredValue(77, false, "{\"a\":1}");
  auto view = DecodeStoredValue(v);
  ASSERT_TRUE(view.ok());
  EXPECT_EQ(view->version, 77u);
  EXPECT_FALSE(view->tombstone);
  EXPECT_EQ(view->body, "{\"a\":1}");
  auto tomb = DecodeStoredValue(EncodeStoredValue(5, true, "ignored"));
  ASSERT_TRUE(tomb.ok());
  EXPECT_TRUE(tomb->tombstone);
  EXPECT_TRUE(tomb->body.empty());
}

TEST(CodecTest, RejectsCorruptBytes) {
  std::string v = EncodeStoredValue(1, false, "{}");
  v[0] = 2;  // unknown format
  EXPECT_TRUE(Is(DecodeStoredValue(v).status(), ErrorReason::kCorruption));
  v = EncodeStoredValue(1, false, "{}");
  v[1] = 0x02;  // unknown flag
  EXPECT_TRUE(Is(DecodeStoredValue(v).status(), ErrorReason::kCorruption));
  v = EncodeStoredValue(1, true, "");
  v += "x";  // tombstone with a body
  EXPECT_TRUE(Is(DecodeStoredValue(v).status(), ErrorReason::kCorruption));
  EXPECT_FALSE(DecodeStoredValue("\x01").ok());
  EXPECT_FALSE(DecodeStoredKey("short").ok());
  EXPECT_FALSE(DecodeStoredKey(EncodeStoredKey(Point(1), CollectionId(0), "k")).ok());

  Document d{.collection = CollectionId(3), .primary_key = "pk", .body = "{}", .version = 9};
  std::string bytes = EncodeDocument(d);
  EXPECT_FALSE(DecodeDocument(bytes.substr(0, bytes.size() - 12)).ok());
  std::string wrong_point = bytes;
  wrong_point[2] ^= 1;  // first byte of the point
  EXPECT_TRUE(Is(DecodeDocument(wrong_point).status(), ErrorReason::kCorruption));
  EXPECT_FALSE(DecodeDocument("").ok());
  EXPECT_FALSE(DecodeDocument("\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff").ok());
}

TEST(CodecTest, VarintRoundTrip) {
  for (uint64_t v : {0ull, 1ull, 127ull, 128ull, 300ull, ~0ull}) {
    std::string s;
    AppendVarint64(v, &s);
    std::string_view in = s;
    uint64_t out = 0;
    ASSERT_TRUE(ConsumeVarint64(&in, &out));
    EXPECT_EQ(out, v);
    EXPECT_TRUE(in.empty());
  }
  std::string_view overlong = "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02";
  uint64_t out = 0;
  EXPECT_FALSE(ConsumeVarint64(&overlong, &out));
}

TEST(PointRangeTest, BoundsAndSplit) {
  const PointRange all = PointRange::All();
  EXPECT_TRUE(all.Contains(0ull));
  EXPECT_TRUE(all.Contains(~0ull));
  EXPECT_FALSE(all.empty());
  auto halves = all.SplitAt(1ull << 63);
  ASSERT_TRUE(halves.ok());
  EXPECT_FALSE(halves->first.end_is_max());
  EXPECT_EQ(halves->first.end(), 1ull << 63);
  EXPECT_TRUE(halves->second.end_is_max());
  EXPECT_FALSE(halves->first.Overlaps(halves->second));
  EXPECT_TRUE(all.Covers(halves->second));
  EXPECT_FALSE(all.SplitAt(0).ok());
  EXPECT_FALSE(PointRange::Make(5, 4).ok());
  EXPECT_TRUE(PointRange::Make(5, 5)->empty());
  EXPECT_LT(halves->first.BeginKey(), halves->first.EndKey());
  EXPECT_EQ(halves->first.EndKey(), halves->second.BeginKey());
}

}  // namespace
}  // namespace shoal::storage
