// CheckBoundedReads (stale_reads.h) on small hand-made histories: each rule holds and each
// violation is found.

#include "tests/sim/stale_reads.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace shoal::sim {
namespace {

constexpr int64_t kBound = 1000;

Operation Write(OpKind kind, std::string value, int64_t call, int64_t ret,
                OpOutcome outcome = OpOutcome::kOk) {
  return Operation{.client = 1,
                   .kind = kind,
                   .value = std::move(value),
                   .expected = "",
                   .outcome = outcome,
                   .read_value = "",
                   .call_us = call,
                   .return_us = outcome == OpOutcome::kUnknown ? kNeverReturned : ret};
}

BoundedRead Read(std::optional<std::string> value, int64_t call) {
  return BoundedRead{
      .key = "k", .call_us = call, .return_us = call + 10, .value = std::move(value)};
}

std::map<std::string, std::vector<Operation>> History(std::vector<Operation> ops) {
  return {{"k", std::move(ops)}};
}

TEST(StaleReadsTest, TheLatestValueOrOneWithinTheBoundPasses) {
  const auto history =
      History({Write(OpKind::kUpsert, "a", 0, 10), Write(OpKind::kUpsert, "b", 20, 30)});
  EXPECT_FALSE(CheckBoundedReads(history, {Read("b", 5000)}, kBound).has_value());
  // "b" returned at 30, within the bound of a read at 1000: "a" may still be seen.
  EXPECT_FALSE(CheckBoundedReads(history, {Read("a", 1000)}, kBound).has_value());
}

TEST(StaleReadsTest, AValueOlderThanAWriteAcknowledgedBeforeTheBoundIsStale) {
  const auto history =
      History({Write(OpKind::kUpsert, "a", 0, 10), Write(OpKind::kUpsert, "b", 20, 30)});
  auto failure = CheckBoundedReads(history, {Read("a", 5000)}, kBound);
  ASSERT_TRUE(failure.has_value());
  EXPECT_NE(failure->find("stale"), std::string::npos) << *failure;
  // Concurrent writes are not ordered: "a" ending after "b" began may follow it.
  const auto overlapping =
      History({Write(OpKind::kUpsert, "a", 0, 25), Write(OpKind::kUpsert, "b", 20, 30)});
  EXPECT_FALSE(CheckBoundedReads(overlapping, {Read("a", 5000)}, kBound).has_value());
}

TEST(StaleReadsTest, AValueNoWriteMayHaveWrittenIsAPhantom) {
  const auto history = History({Write(OpKind::kUpsert, "a", 0, 10),
                                Write(OpKind::kInsert, "refused", 20, 30, OpOutcome::kDuplicate),
                                Write(OpKind::kUpsert, "unknown", 40, 0, OpOutcome::kUnknown)});
  EXPECT_TRUE(CheckBoundedReads(history, {Read("refused", 5000)}, kBound).has_value());
  EXPECT_TRUE(CheckBoundedReads(history, {Read("never", 5000)}, kBound).has_value());
  // An unknown write may have taken effect at any time after its call.
  EXPECT_FALSE(CheckBoundedReads(history, {Read("unknown", 5000)}, kBound).has_value());
}

TEST(StaleReadsTest, AbsenceIsJudgedAgainstTheDeletesAndTheInitialState) {
  const auto inserted = History({Write(OpKind::kInsert, "a", 0, 10)});
  EXPECT_FALSE(CheckBoundedReads(inserted, {Read(std::nullopt, 500)}, kBound).has_value());
  EXPECT_TRUE(CheckBoundedReads(inserted, {Read(std::nullopt, 5000)}, kBound).has_value());
  const auto deleted =
      History({Write(OpKind::kInsert, "a", 0, 10), Write(OpKind::kDelete, "", 20, 30)});
  EXPECT_FALSE(CheckBoundedReads(deleted, {Read(std::nullopt, 5000)}, kBound).has_value());
  EXPECT_TRUE(CheckBoundedReads(deleted, {Read("a", 5000)}, kBound).has_value());
}

}  // namespace
}  // namespace shoal::sim
