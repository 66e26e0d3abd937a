#include "src/storage/mutation.h"

#include <gtest/gtest.h>

#include "src/storage/errors.h"

namespace shoal::storage {
namespace {

const std::optional<StoredState> kNothing;
const std::optional<StoredState> kLive = StoredState{.version = 5, .body = R"({"a":1})"};
const std::optional<StoredState> kTomb = StoredState{.version = 6, .tombstone = true};

std::optional<ErrorReason> Outcome(const Mutation& m, const std::optional<StoredState>& stored,
                                   Decision* decision = nullptr) {
  std::optional<FilterEvaluator> evaluator;
  if (!m.condition.fields.empty()) evaluator.emplace(m.condition.fields);
  auto d = Decide(m, stored, evaluator.has_value() ? &*evaluator : nullptr);
  if (d.ok()) {
    if (decision != nullptr) *decision = *d;
    return std::nullopt;
  }
  return ReasonOf(d.status());
}

Mutation Of(MutationKind kind) { return Mutation{.kind = kind, .collection = CollectionId(1)}; }

TEST(MutationTest, InsertUpdateUpsertDelete) {
  EXPECT_EQ(Outcome(Of(MutationKind::kInsert), kNothing), std::nullopt);
  EXPECT_EQ(Outcome(Of(MutationKind::kInsert), kLive), ErrorReason::kDuplicate);
  EXPECT_EQ(Outcome(Of(MutationKind::kInsert), kTomb), std::nullopt);
  EXPECT_EQ(Outcome(Of(MutationKind::kUpdate), kNothing), ErrorReason::kNotFound);
  EXPECT_EQ(Outcome(Of(MutationKind::kUpdate), kLive), std::nullopt);
  EXPECT_EQ(Outcome(Of(MutationKind::kUpdate), kTomb), ErrorReason::kNotFound);
  for (const auto& s : {kNothing, kLive, kTomb}) {
    EXPECT_EQ(Outcome(Of(MutationKind::kUpsert), s), std::nullopt);
  }
  EXPECT_EQ(Outcome(Of(MutationKind::kDelete), kNothing), ErrorReason::kNotFound);
  EXPECT_EQ(Outcome(Of(MutationKind::kDelete), kLive), std::nullopt);
  EXPECT_EQ(Outcome(Of(MutationKind::kDelete), kTomb), ErrorReason::kNotFound);
  EXPECT_TRUE(Of(MutationKind::kDelete).WritesTombstone());
  EXPECT_FALSE(Of(MutationKind::kUpsert).WritesTombstone());
}

TEST(MutationTest, ConditionalUpdateOnTombstoneFlag) {
  // Paper 000 Alg. 1: S(d_p, tombstone = true) <- d.
  Mutation m = Of(MutationKind::kUpdateIf);
  m.condition = Condition::IsTombstone();
  EXPECT_EQ(Outcome(m, kNothing), ErrorReason::kNotFound);
  EXPECT_EQ(Outcome(m, kLive), ErrorReason::kConditionFailed);
  EXPECT_EQ(Outcome(m, kTomb), std::nullopt);
  m.condition = Condition::IsLive();
  EXPECT_EQ(Outcome(m, kLive), std::nullopt);
  EXPECT_EQ(Outcome(m, kTomb), ErrorReason::kConditionFailed);
}

TEST(MutationTest, ConditionOnVersionAndFields) {
  Mutation m = Of(MutationKind::kUpdateIf);
  m.condition = Condition::VersionIs(5);
  EXPECT_EQ(Outcome(m, kLive), std::nullopt);
  m.condition = Condition{.version_op = CompareOp::kLt, .version_operand = 5};
  EXPECT_EQ(Outcome(m, kLive), ErrorReason::kConditionFailed);
  m.condition = Condition{.fields = {{{"a", CompareOp::kEq, int64_t{1}}}}};
  EXPECT_EQ(Outcome(m, kLive), std::nullopt);
  EXPECT_EQ(Outcome(m, kTomb), ErrorReason::kConditionFailed);
  m.condition = Condition{.fields = {{{"a", CompareOp::kEq, int64_t{2}}}}};
  EXPECT_EQ(Outcome(m, kLive), ErrorReason::kConditionFailed);
}

TEST(MutationTest, ParameterizedUpsert) {
  // Paper 000 §5: S ∪q d = S + {d} if d ∉ S(q) (DUPLICATE when d ∈ S), else replace.
  Mutation m = Of(MutationKind::kUpsertIf);
  m.condition = Condition::IsLive();
  EXPECT_EQ(Outcome(m, kNothing), std::nullopt);
  EXPECT_EQ(Outcome(m, kLive), std::nullopt);
  EXPECT_EQ(Outcome(m, kTomb), ErrorReason::kDuplicate);
}

TEST(MutationTest, CompareAndSet) {
  Mutation m = Of(MutationKind::kCompareAndSet);
  m.version = 0;
  EXPECT_EQ(Outcome(m, kNothing), std::nullopt);
  EXPECT_EQ(Outcome(m, kLive), ErrorReason::kConditionFailed);
  m.version = 5;
  EXPECT_EQ(Outcome(m, kNothing), ErrorReason::kNotFound);
  EXPECT_EQ(Outcome(m, kLive), std::nullopt);
  m.version = 6;
  EXPECT_EQ(Outcome(m, kTomb), std::nullopt);
}

TEST(MutationTest, ApplyIfNewerNeverOverwritesNewer) {
  Mutation m = Of(MutationKind::kApplyIfNewer);
  Decision d = Decision::kWrite;
  m.version = 5;
  ASSERT_EQ(Outcome(m, kLive, &d), std::nullopt);
  EXPECT_EQ(d, Decision::kSkip);  // equal: already have it
  m.version = 4;
  ASSERT_EQ(Outcome(m, kLive, &d), std::nullopt);
  EXPECT_EQ(d, Decision::kSkip);
  m.version = 7;
  ASSERT_EQ(Outcome(m, kTomb, &d), std::nullopt);
  EXPECT_EQ(d, Decision::kWrite);
  ASSERT_EQ(Outcome(m, kNothing, &d), std::nullopt);
  EXPECT_EQ(d, Decision::kWrite);
}

}  // namespace
}  // namespace shoal::storage
