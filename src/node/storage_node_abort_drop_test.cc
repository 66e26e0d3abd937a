// Unit tests of an aborted move's drop at its destination (ABORTED STAGING in storage_node.h;
// docs/design/replication.md §6.1): it keeps a copy the node held from before the move and takes
// what the move staged. The fixture is in storage_node_test_fixture.h.

#include <gtest/gtest.h>

#include <string>

#include "src/node/storage_node_test_fixture.h"

namespace shoal::node {
namespace {

using namespace test;  // NOLINT(google-build-using-namespace): the shared fixture

constexpr int kDocuments = 4;

class AbortDropTest : public StorageNodeTest {
 protected:
  // What a copy of b0 that n2 held as a backup looks like (the state a backup's writes leave):
  // the bucket's documents (staged here by m1, aborted with its drop lost) and a stored position
  // that vouches for them. Leaves the map at m1's abort, with n2 no replica of b0.
  void HoldACopyOfB0AtN2(const RetryMaps& retry) {
    InsertInto(kB0, kDocuments);
    Publish(maps_.copy);
    SnapshotToN2(kMove, kB0);
    Publish(retry.aborted);
    ASSERT_TRUE(node(kN2).store()->SetReplicaState(kB0, kHeld).ok());
    ASSERT_EQ(node(kN2).RoleOf(kB0), LocalRole::kNotAssigned);
    ASSERT_EQ(DocumentsAtN2(), kDocuments);
  }

  // The drop the coordinator sends the destination of `move` once it aborted in `aborted`.
  StatusOr<Response> AbortedDrop(MoveId move, const ShardMapPtr& aborted) {
    return Call(kN2,
                transport::DropBucketRequest{.epoch = aborted->epoch(),
                                             .move = move,
                                             .bucket = kB0,
                                             .range = RangeOf(*maps_.initial, kB0),
                                             .reason = transport::DropReason::kAbortedStaging});
  }

  // The documents of b0 that n2's store holds.
  int DocumentsAtN2() {
    int found = 0;
    for (int i = 0; i < kDocuments; ++i) {
      if (node(kN2).store()->Get(kDocs, KeyIn(kB0, i)).ok()) ++found;
    }
    return found;
  }

  static inline const storage::ReplicaState kHeld{
      .position = {.term = Term(1), .rseq = kDocuments},
      .history = {storage::TermStart{.term = Term(1), .first_rseq = 1}}};
};

// A repair to the holder n2 aborts before it staged anything (the holder was down, say): its drop
// deletes nothing, and the copy still vouches for its data, so the next repair may resume it. A
// late request of the aborted repair finds the move gone and stages nothing either.
TEST_F(AbortDropTest, AnAbortedMovesDropKeepsACopyHeldFromBefore) {
  Run([&] {
    const RetryMaps retry = BuildRetryMaps(maps_, kRetry);
    ASSERT_NO_FATAL_FAILURE(HoldACopyOfB0AtN2(retry));
    Publish(retry.copy);
    const ShardMapPtr repair_aborted =
        Next(retry.copy, [](ShardMapEdit& e) { e.AbortTransition(kB0, kRetry); });
    Publish(repair_aborted);

    auto kept = AbortedDrop(kRetry, repair_aborted);
    ASSERT_TRUE(StatusOf(kept).ok()) << StatusOf(kept);
    EXPECT_EQ(DocumentsAtN2(), kDocuments);
    EXPECT_EQ(node(kN2).store()->GetReplicaState(kB0), kHeld);
    // Again (the coordinator's retry of a lost answer): the same.
    ASSERT_TRUE(StatusOf(AbortedDrop(kRetry, repair_aborted)).ok());
    EXPECT_EQ(node(kN2).store()->GetReplicaState(kB0), kHeld);

    auto late = Call(kN2, transport::ResumeCopyRequest{.move = kRetry,
                                                       .bucket = kB0,
                                                       .source = kN1,
                                                       .store_id = node(kN2).store()->store_id()});
    EXPECT_EQ(transport::ClusterErrorOf(StatusOf(late)), ClusterError::kStaleMove)
        << StatusOf(late);
    EXPECT_EQ(node(kN2).store()->GetReplicaState(kB0), kHeld);

    // The drop of a committed move's leaving copy, or of a stale copy, takes it as before.
    auto dropped = Drop(kN2, repair_aborted, kB0);
    ASSERT_TRUE(StatusOf(dropped).ok()) << StatusOf(dropped);
    EXPECT_EQ(DocumentsAtN2(), 0);
    EXPECT_EQ(node(kN2).store()->GetReplicaState(kB0), storage::ReplicaState{});
  });
}

// A repair to the holder n2 staged a snapshot before it aborted: the ingest cleared the copy's
// state first, so the data is the move's, and the abort's drop takes it all.
TEST_F(AbortDropTest, AnAbortedMovesDropTakesWhatTheMoveStaged) {
  Run([&] {
    const RetryMaps retry = BuildRetryMaps(maps_, kRetry);
    ASSERT_NO_FATAL_FAILURE(HoldACopyOfB0AtN2(retry));
    Publish(retry.copy);
    SnapshotToN2(kRetry, kB0);
    ASSERT_FALSE(HasFailure());
    EXPECT_EQ(node(kN2).store()->GetReplicaState(kB0), storage::ReplicaState{});
    const ShardMapPtr repair_aborted =
        Next(retry.copy, [](ShardMapEdit& e) { e.AbortTransition(kB0, kRetry); });
    Publish(repair_aborted);

    auto dropped = AbortedDrop(kRetry, repair_aborted);
    ASSERT_TRUE(StatusOf(dropped).ok()) << StatusOf(dropped);
    EXPECT_EQ(DocumentsAtN2(), 0);
  });
}

// Staged data without a position (m1 aborted, its drop lost) is taken by the next aborted move's
// drop: it vouches for nothing.
TEST_F(AbortDropTest, AnAbortedMovesDropTakesDataThatVouchesForNothing) {
  Run([&] {
    const RetryMaps retry = BuildRetryMaps(maps_, kRetry);
    InsertInto(kB0, kDocuments);
    Publish(maps_.copy);
    SnapshotToN2(kMove, kB0);
    ASSERT_FALSE(HasFailure());
    Publish(retry.aborted);
    ASSERT_EQ(DocumentsAtN2(), kDocuments);

    auto dropped = AbortedDrop(kMove, retry.aborted);
    ASSERT_TRUE(StatusOf(dropped).ok()) << StatusOf(dropped);
    EXPECT_EQ(DocumentsAtN2(), 0);
  });
}

}  // namespace
}  // namespace shoal::node
