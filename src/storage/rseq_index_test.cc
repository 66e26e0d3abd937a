// RseqIndex (rseq_index.h) and IsPrefixOf (replica_position.h): the two proofs a primary needs
// before a returning copy skips its snapshot (docs/design/replication.md §4.3, §6).

#include "src/storage/rseq_index.h"

#include <gtest/gtest.h>

#include "src/storage/replica_position.h"

namespace shoal::storage {
namespace {

TEST(RseqIndexTest, EmptyVouchesForNothing) {
  RseqIndex index;
  EXPECT_FALSE(index.SequenceAfter(0).has_value());
  EXPECT_FALSE(index.SequenceAfter(100).has_value());
}

TEST(RseqIndexTest, APositionGetsTheLastPointAtOrBelowIt) {
  RseqIndex index;
  index.Record(10, 1000);  // floor 11
  index.Record(11, 1005);
  index.Record(14, 1030);
  // The copy must hold a write the index saw: 10 is the write before its first point.
  EXPECT_FALSE(index.SequenceAfter(10).has_value());
  EXPECT_EQ(index.SequenceAfter(11), 1005u);
  EXPECT_EQ(index.SequenceAfter(13), 1005u);
  EXPECT_EQ(index.SequenceAfter(14), 1030u);
  EXPECT_EQ(index.SequenceAfter(1000), 1030u);
  index.Clear();
  EXPECT_FALSE(index.SequenceAfter(14).has_value());
  // Afresh: the floor is the new first point's.
  index.Record(20, 2000);
  EXPECT_FALSE(index.SequenceAfter(14).has_value());
  EXPECT_FALSE(index.SequenceAfter(20).has_value());
  EXPECT_EQ(index.SequenceAfter(21), 2000u);
}

TEST(RseqIndexTest, ARepeatedRseqKeepsTheEarlierPoint) {
  RseqIndex index;
  index.Record(1, 10);
  index.Record(2, 20);
  index.Record(2, 25);  // a call that wrote nothing took no rseq
  EXPECT_EQ(index.size(), 2u);
  EXPECT_EQ(index.SequenceAfter(2), 20u);
}

TEST(RseqIndexTest, ThinsTheOlderHalfAndKeepsItsFloor) {
  RseqIndex index;
  for (uint64_t r = 0; r < 100'000; ++r) index.Record(r, 7 * r + 3);
  EXPECT_LT(index.size(), RseqIndex::kMaxPoints);
  EXPECT_FALSE(index.SequenceAfter(0).has_value());
  for (uint64_t x : {1ull, 2ull, 50ull, 5000ull, 99'000ull, 99'999ull, 200'000ull}) {
    auto sequence = index.SequenceAfter(x);
    ASSERT_TRUE(sequence.has_value()) << x;
    // A lower bound: the point of some rseq r <= x, so at most x's own point's sequence.
    EXPECT_LE(*sequence, 7 * std::min<uint64_t>(x, 99'999) + 3) << x;
  }
  // Recent positions keep a fine resolution.
  EXPECT_GE(*index.SequenceAfter(99'999), 7 * (99'999 - 4) + 3);
}

ReplicaState State(ReplicaPosition position, std::vector<TermStart> history) {
  return ReplicaState{.position = position, .history = std::move(history)};
}

TEST(IsPrefixOfTest, ACopyBehindInTheSameHistoryIsAPrefix) {
  const ReplicaState primary = State({Term(7), 30}, {{Term(3), 1}, {Term(7), 21}});
  EXPECT_TRUE(IsPrefixOf(State({Term(3), 12}, {{Term(3), 1}}), primary));
  EXPECT_TRUE(IsPrefixOf(State({Term(3), 20}, {{Term(3), 1}}), primary));
  EXPECT_TRUE(IsPrefixOf(State({Term(7), 25}, {{Term(3), 1}, {Term(7), 21}}), primary));
  EXPECT_TRUE(IsPrefixOf(primary, primary));
  // A term that began with no write is no difference.
  EXPECT_TRUE(IsPrefixOf(State({Term(3), 20}, {{Term(3), 1}, {Term(5), 21}}), primary));
}

TEST(IsPrefixOfTest, ADivergentCopyIsNot) {
  const ReplicaState primary = State({Term(7), 30}, {{Term(3), 1}, {Term(7), 21}});
  // The old primary of term 3 ordered 21 and 22 that the winner never got.
  EXPECT_FALSE(IsPrefixOf(State({Term(3), 22}, {{Term(3), 1}}), primary));
  // Ahead of the primary in its own term.
  EXPECT_FALSE(IsPrefixOf(State({Term(7), 31}, {{Term(3), 1}, {Term(7), 21}}), primary));
  // A term the primary's history does not have.
  EXPECT_FALSE(IsPrefixOf(State({Term(5), 21}, {{Term(3), 1}, {Term(5), 21}}), primary));
  // The same last term, but an earlier one differs.
  EXPECT_FALSE(IsPrefixOf(State({Term(7), 25}, {{Term(2), 1}, {Term(7), 21}}), primary));
  EXPECT_FALSE(IsPrefixOf(State({Term(7), 25}, {{Term(3), 1}, {Term(7), 19}}), primary));
}

TEST(IsPrefixOfTest, ACopyWithNoWriteOrNoHistoryIsNot) {
  const ReplicaState primary = State({Term(7), 30}, {{Term(3), 1}, {Term(7), 21}});
  EXPECT_FALSE(IsPrefixOf(State({}, {}), primary));
  EXPECT_FALSE(IsPrefixOf(State({Term(3), 0}, {{Term(3), 1}}), primary));
  EXPECT_FALSE(IsPrefixOf(State({Term(3), 5}, {}), primary));
  EXPECT_FALSE(IsPrefixOf(State({Term(3), 5}, {{Term(3), 1}}), State({}, {})));
}

}  // namespace
}  // namespace shoal::storage
