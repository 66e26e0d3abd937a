#include "src/hotspot/field_root.h"

#include <gtest/gtest.h>

#include "src/hotspot/field_spec.h"

namespace shoal::hotspot {
namespace {

const Fold& Sum() { return **FoldRegistry::Global().Find("sum"); }

TEST(FieldRootTest, EncodeDecodeRoundTrip) {
  FieldRoot root = FieldRoot::Empty(Value(0));
  ASSERT_TRUE(root.AddCells({"c1", "c2", "c3"}).ok());
  ASSERT_TRUE(root.Retire({"c3"}).ok());
  ASSERT_TRUE(root.Absorb(Sum(), {{.token = "c3", .value = Value(5)}}).ok());
  auto decoded = FieldRoot::Decode(root.Encode());
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->Encode(), root.Encode());
  EXPECT_EQ(decoded->base(), Value(5));
  EXPECT_EQ(decoded->ActiveTokens(), (std::vector<std::string>{"c1", "c2"}));
  EXPECT_TRUE(decoded->IsAbsorbed("c3"));
  EXPECT_TRUE(decoded->CheckInvariants().ok());
  EXPECT_FALSE(FieldRoot::Decode("{}").ok());
  EXPECT_FALSE(FieldRoot::Decode("[1]").ok());
}

TEST(FieldRootTest, AbsorbIsIdempotentAndBumpsSeq) {
  FieldRoot root = FieldRoot::Empty(Value(10));
  ASSERT_TRUE(root.AddCells({"a", "b"}).ok());
  const uint64_t seq = root.seq();
  ASSERT_TRUE(root.Absorb(Sum(), {{.token = "a", .value = Value(3)}}).ok());
  ASSERT_TRUE(root.Absorb(Sum(), {{.token = "a", .value = Value(3)}}).ok());
  EXPECT_EQ(root.base(), Value(13));  // absorbed once (R2)
  EXPECT_EQ(root.seq(), seq + 2);     // every write bumps seq (R3)
  EXPECT_FALSE(root.HasCell("a"));
  EXPECT_TRUE(root.CheckInvariants().ok());
  EXPECT_FALSE(root.AddCells({"a"}).ok());  // a token is never reused (R1)
}

TEST(FieldRootTest, PrunesOnlyAfterTheLag) {
  FieldRoot root = FieldRoot::Empty(Value(0));
  ASSERT_TRUE(root.AddCells({"a"}).ok());
  ASSERT_TRUE(root.Absorb(Sum(), {{.token = "a", .value = Value(1)}}).ok());
  root.RecordDeleted({"a"});
  const uint64_t deleted_at = root.seq();
  EXPECT_TRUE(root.IsAbsorbed("a"));
  while (root.seq() < deleted_at + kPruneLag - 1) {
    root.RecordDeleted({});
    EXPECT_TRUE(root.IsAbsorbed("a")) << root.seq();  // R4: a slow reader may still need it
  }
  root.RecordDeleted({});
  EXPECT_FALSE(root.IsAbsorbed("a"));
  EXPECT_TRUE(root.CheckInvariants().ok());
}

TEST(FieldSpecTest, ParsesEveryKindAndRefusesBadDeclarations) {
  auto schema = CollectionSchema::Parse(
      R"({"votes": {"fold": "sum", "neutral": 0, "shards": 10},
          "visits": {"fold": "count"},
          "likes": {"fold": "sum", "shards": "auto", "max_shards": 16},
          "responses": {"group": 8}})",
      FoldRegistry::Global());
  ASSERT_TRUE(schema.ok()) << schema.status();
  EXPECT_EQ(schema->Find("votes")->kind, FieldKind::kStatic);
  EXPECT_EQ(schema->Find("votes")->shards, 10u);
  EXPECT_EQ(schema->Find("visits")->kind, FieldKind::kDynamic);
  EXPECT_EQ(schema->Find("likes")->kind, FieldKind::kAuto);
  EXPECT_EQ(schema->Find("likes")->policy.max_shards, 16u);
  EXPECT_EQ(schema->Find("responses")->kind, FieldKind::kEntityGroup);
  auto again = CollectionSchema::FromJson(schema->ToJson(), FoldRegistry::Global());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->ToJson(), schema->ToJson());

  for (const char* bad : {
           R"({"v": {"fold": "nope", "shards": 2}})",     // unknown fold
           R"({"v": {"fold": "sum", "shards": 0}})",      // too few
           R"({"v": {"fold": "sum", "shards": 65}})",     // too many
           R"({"v": {"fold": "sum", "neutral": 1}})",     // not neutral
           R"({"v": {"fold": "sum", "shardz": 2}})",      // typo
           R"({"v": {"fold": "sum", "max_shards": 2}})",  // bounds without auto
           R"({"v": {"group": 0}})",                      // empty group
           R"({"v": 3})",                                 // not an object
           R"([1])",                                      // not an object
           R"({"v": )",                                   // malformed
       }) {
    EXPECT_EQ(CollectionSchema::Parse(bad, FoldRegistry::Global()).status().code(),
              StatusCode::kInvalidArgument)
        << bad;
  }
}

TEST(FieldSpecTest, MergeKeepsKindAndFold) {
  auto schema =
      *CollectionSchema::Parse(R"({"v": {"fold": "sum", "shards": 2}})", FoldRegistry::Global());
  auto more = *CollectionSchema::Parse(R"({"v": {"fold": "sum", "shards": "auto"}})",
                                       FoldRegistry::Global());
  EXPECT_TRUE(schema.Merge(more).ok());  // static <-> auto keeps the stored cells
  auto other_fold =
      *CollectionSchema::Parse(R"({"v": {"fold": "max", "shards": 2}})", FoldRegistry::Global());
  EXPECT_EQ(schema.Merge(other_fold).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(schema.Find("v")->kind, FieldKind::kAuto);  // unchanged by the refused merge
}

}  // namespace
}  // namespace shoal::hotspot
