#include "src/storage/predicate.h"

#include <gtest/gtest.h>

#include <cmath>

#include "src/storage/errors.h"

namespace shoal::storage {
namespace {

bool Match(const DocumentFilter& filter, std::string_view body) {
  EXPECT_TRUE(ValidateFilter(filter).ok());
  FilterEvaluator evaluator(filter);
  auto result = evaluator.Matches(body);
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() && *result;
}

DocumentFilter One(std::string path, CompareOp op, FieldValue value) {
  return DocumentFilter{{FieldPredicate{std::move(path), op, std::move(value)}}};
}

constexpr std::string_view kBody =
    R"({"name":"ann","age":41,"score":2.5,"ok":true,"none":null,"big":18446744073709551615,)"
    R"("addr":{"city":"Oslo","zip":150,"geo":{"lat":59.9}},"tags":["a","b"]})";

TEST(PredicateTest, EqualityOnTopLevelFields) {
  EXPECT_TRUE(Match(One("name", CompareOp::kEq, std::string("ann")), kBody));
  EXPECT_FALSE(Match(One("name", CompareOp::kEq, std::string("bob")), kBody));
  EXPECT_TRUE(Match(One("age", CompareOp::kEq, int64_t{41}), kBody));
  EXPECT_TRUE(Match(One("age", CompareOp::kEq, 41.0), kBody));
  EXPECT_TRUE(Match(One("ok", CompareOp::kEq, true), kBody));
  EXPECT_TRUE(Match(One("none", CompareOp::kEq, nullptr), kBody));
  EXPECT_FALSE(Match(One("ok", CompareOp::kEq, nullptr), kBody));
}

TEST(PredicateTest, RangesAndDottedPaths) {
  EXPECT_TRUE(Match(One("addr.zip", CompareOp::kGe, int64_t{150}), kBody));
  EXPECT_FALSE(Match(One("addr.zip", CompareOp::kGt, int64_t{150}), kBody));
  EXPECT_TRUE(Match(One("addr.geo.lat", CompareOp::kLt, 60.0), kBody));
  EXPECT_TRUE(Match(One("score", CompareOp::kLe, int64_t{3}), kBody));
  EXPECT_TRUE(Match(One("addr.city", CompareOp::kGt, std::string("Berlin")), kBody));
  EXPECT_TRUE(Match(One("big", CompareOp::kGt, int64_t{INT64_MAX}), kBody));
  DocumentFilter both = One("age", CompareOp::kGe, int64_t{40});
  both.all_of.push_back({"age", CompareOp::kLt, int64_t{42}});
  EXPECT_TRUE(Match(both, kBody));
  both.all_of.push_back({"name", CompareOp::kEq, std::string("bob")});
  EXPECT_FALSE(Match(both, kBody));
}

TEST(PredicateTest, MissingAndMismatchedFields) {
  EXPECT_FALSE(Match(One("missing", CompareOp::kEq, int64_t{1}), kBody));
  EXPECT_FALSE(Match(One("missing", CompareOp::kNe, int64_t{1}), kBody));
  EXPECT_FALSE(Match(One("addr.zip.x", CompareOp::kEq, int64_t{1}), kBody));
  EXPECT_FALSE(Match(One("name", CompareOp::kLt, int64_t{1}), kBody));  // string vs number
  EXPECT_TRUE(Match(One("name", CompareOp::kNe, int64_t{1}), kBody));
  EXPECT_FALSE(Match(One("tags", CompareOp::kEq, std::string("a")), kBody));
  EXPECT_TRUE(Match(DocumentFilter{}, kBody));
}

TEST(PredicateTest, ValidatesFilters) {
  EXPECT_FALSE(ValidateFilter(One("", CompareOp::kEq, int64_t{1})).ok());
  EXPECT_FALSE(ValidateFilter(One("a..b", CompareOp::kEq, int64_t{1})).ok());
  EXPECT_FALSE(ValidateFilter(One("a.", CompareOp::kEq, int64_t{1})).ok());
  EXPECT_FALSE(ValidateFilter(One("a", CompareOp::kLt, true)).ok());
  EXPECT_FALSE(ValidateFilter(One("a", CompareOp::kGe, nullptr)).ok());
  EXPECT_FALSE(ValidateFilter(One("a", CompareOp::kEq, std::nan(""))).ok());
  EXPECT_TRUE(ValidateFilter(One("a.b", CompareOp::kNe, false)).ok());
}

TEST(PredicateTest, EvaluatorIsReusable) {
  const DocumentFilter filter = One("n", CompareOp::kGe, int64_t{10});
  FilterEvaluator evaluator(filter);
  int matches = 0;
  for (int i = 0; i < 20; ++i) {
    auto m = evaluator.Matches("{\"n\":" + std::to_string(i) + "}");
    ASSERT_TRUE(m.ok());
    matches += *m;
  }
  EXPECT_EQ(matches, 10);
  EXPECT_TRUE(Is(evaluator.Matches("{\"n\":").status(), ErrorReason::kCorruption));
}

}  // namespace
}  // namespace shoal::storage
