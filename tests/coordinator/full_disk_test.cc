// A move to a node whose disk is full (FAILURE-PATTERNS.md, "from the field": a move to a node
// whose disk fills must abort cleanly with the source still serving). The destination's store
// runs on a file system that reports no free space and refuses every write under the node's
// directory while it is full; the disk fills before the move or at a named step of it up to the
// ingest, the destination's first write for the move. The store's free-space guard refuses the
// ingest and the clients' writes with NO_SPACE before the engine meets the full disk, so the
// node needs no restart: once space is back it takes writes and the retried move
// (docs/design/storage.md, "A full disk"). With no client writing during the move, the
// destination writes nothing after the ingest.

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/coordinator/coordinator.h"
#include "src/storage/errors.h"
#include "src/storage/full_disk_fs.h"
#include "tests/support/coordinator_test_fixture.h"

namespace shoal::coordinator {
namespace {

using namespace test;  // NOLINT(google-build-using-namespace): the shared fixture

// The coordinator's failpoint at which the destination's disk fills ("" = before the move).
class FullDiskTest : public CoordinatorTest, public ::testing::WithParamInterface<const char*> {
 protected:
  FullDiskTest() : disk_(std::make_shared<storage::FullDiskFileSystem>(dir_ + "/node-2/")) {
    node_env_ = storage::FullDiskFileSystem::NewEnv(disk_);
    // Every write reads the free space: the disk fills between two steps of the simulation.
    node_disk_check_interval_ = std::chrono::milliseconds(0);
  }

  // A loaded document in a bucket that only n2 serves.
  int DocumentOnN2() {
    for (int i = 0; i < kDocuments; ++i) {
      const cluster::BucketPlacement& bucket = map()->Lookup(PointOf(collection_, Key(i)));
      if (bucket.replicas == std::vector<NodeId>{kN2} && !bucket.transition.has_value()) return i;
    }
    return -1;
  }

  // The loaded documents that lie in b0.
  std::vector<int> DocumentsOfB0() {
    std::vector<int> out;
    for (int i = 0; i < kDocuments; ++i) {
      if (map()->Lookup(PointOf(collection_, Key(i))).id == kB0) out.push_back(i);
    }
    return out;
  }

  // Space is back: the same move of b0 to n2 commits, and each document of `in_b0` reads
  // `expected(i)`; then every document gets its loaded body back and b0 ends on n2.
  void RetryAndExpectBodies(const std::vector<int>& in_b0,
                            const std::function<std::string(int)>& expected) {
    Status retried = Admin([](Coordinator& c) { return c.MoveBucket(kB0, kN2); });
    ASSERT_TRUE(retried.ok()) << retried;
    client::Client client(sim_);
    for (int i : in_b0) {
      auto got = client.Get(collection_, Key(i));
      ASSERT_TRUE(got.ok()) << Key(i) << ": " << got.status();
      EXPECT_EQ(got->body, expected(i)) << Key(i) << ": the move lost a write made before it";
      // Back to the loaded body, which ExpectB0EndedOn checks for every document.
      auto restored = client.Update(collection_, Key(i), Body(i));
      EXPECT_TRUE(restored.ok()) << Key(i) << ": " << restored.status();
    }
    ExpectB0EndedOn(/*committed=*/true);
  }

  std::shared_ptr<storage::FullDiskFileSystem> disk_;
};

TEST_P(FullDiskTest, TheMoveAbortsTheSourceKeepsServingAndARetryCommitsOnceSpaceIsBack) {
  const std::string fill_at = GetParam();
  bool filled = false;  // the disk fills once: the retry's steps pass the same failpoints
  sim_.SetChaosHook([&](const Address& process, std::string_view failpoint) {
    if (!filled && process == Address::Coordinator() && failpoint == fill_at) {
      filled = true;
      disk_->SetFull(true);
    }
    return false;  // no crash
  });
  Run(/*auto_balance=*/false, [&] {
    ASSERT_EQ(map()->Find(kB0)->replicas, std::vector<NodeId>{kN1});
    const storage::PointRange range = RangeOf(*map()->Find(kB0));
    const std::vector<int> in_b0 = DocumentsOfB0();
    ASSERT_FALSE(in_b0.empty());

    if (fill_at.empty()) {
      filled = true;
      disk_->SetFull(true);
    }
    Status moved = Admin([](Coordinator& c) { return c.MoveBucket(kB0, kN2); });
    EXPECT_FALSE(moved.ok()) << "a move to a full disk committed";
    EXPECT_GT(cluster_->node(kN2)->store()->disk_space().refused(), 0u)
        << "the destination's guard refused nothing while its disk was full";
    EXPECT_EQ(disk_->refused(), 0u) << "the destination's engine met the full disk";
    const MoveProgress progress = coordinator().progress();
    EXPECT_EQ(progress.started, 1u);
    EXPECT_EQ(progress.committed, 0u);
    EXPECT_EQ(progress.aborted, 1u);
    EXPECT_EQ(progress.in_flight, 0u);
    // The map is back to the stable placement, with no transition left, and the destination
    // holds nothing of the bucket.
    EXPECT_EQ(map()->Find(kB0)->replicas, std::vector<NodeId>{kN1});
    EXPECT_FALSE(map()->Find(kB0)->transition.has_value());
    EXPECT_EQ(StoredIn(kN2, range), 0u) << "the aborted move left data behind";
    // Only the source acknowledges writes to b0. While the disk is still full, every document
    // reads back (a read of the full node needs no disk) and the source takes writes to b0.
    ASSERT_TRUE(WaitFor([&] {
      return cluster_->node(kN1)->epoch() == map()->epoch() &&
             cluster_->node(kN2)->epoch() == map()->epoch();
    }));
    EXPECT_TRUE(cluster_->node(kN1)->CanAcknowledgeWrite(Point(range.begin())));
    EXPECT_FALSE(cluster_->node(kN2)->CanAcknowledgeWrite(Point(range.begin())));
    ExpectAllDocumentsReadable();
    // New bodies, so that the move below must carry these writes.
    client::Client writer(sim_);
    for (int i : in_b0) {
      auto written = writer.Update(collection_, Key(i), Body(kDocuments + i));
      EXPECT_TRUE(written.ok()) << Key(i) << ": " << written.status();
    }

    // A client's write to a bucket of the full node: NO_SPACE, and nothing written.
    const int on_n2 = DocumentOnN2();
    ASSERT_GE(on_n2, 0);
    auto refused = writer.Update(collection_, Key(on_n2), Body(kDocuments + on_n2));
    EXPECT_TRUE(storage::Is(refused.status(), storage::ErrorReason::kNoSpace)) << refused.status();
    EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted) << refused.status();
    EXPECT_EQ(disk_->refused(), 0u) << "the full node's engine met the full disk";

    // Space is back: the full node takes writes again with no restart, and the same move
    // commits and carries every write made while the disk was full.
    disk_->SetFull(false);
    auto accepted = writer.Update(collection_, Key(on_n2), Body(kDocuments + on_n2));
    EXPECT_TRUE(accepted.ok()) << accepted.status();
    auto restored_n2 = writer.Update(collection_, Key(on_n2), Body(on_n2));
    EXPECT_TRUE(restored_n2.ok()) << restored_n2.status();
    RetryAndExpectBodies(in_b0, [](int i) { return Body(kDocuments + i); });
  });
  sim_.SetChaosHook(nullptr);
}

INSTANTIATE_TEST_SUITE_P(FillPoints, FullDiskTest,
                         ::testing::Values("", "coordinator.after_begin",
                                           "coordinator.after_export"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           std::string name = info.param;
                           if (name.empty()) return std::string("before_the_move");
                           std::replace(name.begin(), name.end(), '.', '_');
                           return name;
                         });

// The destination's disk reaches its reserve after the ingest (field note C,
// docs/design/failure-patterns.md): before the catch-up rounds, or before the fence, so that the
// source is fenced until the move ends. A writer updates b0's documents all through the move.
// The destination takes no bucket at its reserve: its catch-up refuses (also with nothing to
// apply), the move aborts, and the abort releases the source: every acknowledged write reads
// back from it and it takes writes again. Here the disk still has the reserve's bytes, as the
// guard intends, so the abort's drop of the staged copy succeeds. (On a disk with no byte left,
// that drop stops the destination's engine until space is back: storage.md, "A full disk".)
class FullDiskDuringCatchUpTest : public FullDiskTest {};

TEST_P(FullDiskDuringCatchUpTest, TheMoveAbortsAndTheSourceKeepsEveryAcknowledgedWrite) {
  const std::string fill_at = GetParam();
  bool filled = false;
  sim_.SetChaosHook([&](const Address& process, std::string_view failpoint) {
    if (!filled && process == Address::Coordinator() && failpoint == fill_at) {
      filled = true;
      disk_->SetFreeBytes(node::test::kSmallTestStoreReserve / 2);
    }
    return false;  // no crash
  });
  Run(/*auto_balance=*/false, [&] {
    const std::vector<int> in_b0 = DocumentsOfB0();
    ASSERT_FALSE(in_b0.empty());
    auto w = StartRoundWriter(in_b0, 2 * kMs);
    ASSERT_TRUE(WaitFor([&] { return w->acknowledged_writes > 0; }));
    Status moved = Admin([](Coordinator& c) { return c.MoveBucket(kB0, kN2); });
    const uint64_t during_move = w->acknowledged_writes;
    ASSERT_TRUE(sim_.Sleep(20 * kMs).ok());  // a few more rounds after the abort
    StopRoundWriter(*w);

    EXPECT_TRUE(filled) << fill_at << " was not reached";
    EXPECT_FALSE(moved.ok()) << "a move whose destination's disk filled committed";
    EXPECT_GT(w->acknowledged_writes, during_move) << "the source took no write after the abort";
    EXPECT_GT(cluster_->node(kN2)->store()->disk_space().refused(), 0u)
        << "the destination's guard refused nothing at its reserve";
    const MoveProgress progress = coordinator().progress();
    EXPECT_EQ(progress.committed, 0u);
    EXPECT_EQ(progress.aborted, 1u);
    EXPECT_EQ(progress.in_flight, 0u);
    EXPECT_EQ(map()->Find(kB0)->replicas, std::vector<NodeId>{kN1});
    EXPECT_FALSE(map()->Find(kB0)->transition.has_value());
    EXPECT_EQ(StoredIn(kN2, RangeOf(*map()->Find(kB0))), 0u) << "the aborted move left data";
    ExpectOnlyOwnerAcknowledgesB0(kN1);
    // Every document of b0 holds its last acknowledged update, or a later one of unknown outcome.
    const std::map<int, std::string> at_abort = ExpectNoAcknowledgedRoundLost(*w, in_b0);

    // Space is back: the same move commits and carries the source's state.
    disk_->SetFreeBytes(std::nullopt);
    RetryAndExpectBodies(in_b0, [&](int i) {
      auto it = at_abort.find(i);  // a document that did not read back failed above
      return it == at_abort.end() ? std::string() : it->second;
    });
  });
  sim_.SetChaosHook(nullptr);
}

INSTANTIATE_TEST_SUITE_P(FillPoints, FullDiskDuringCatchUpTest,
                         ::testing::Values("coordinator.after_ingest", "coordinator.before_fence"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '.', '_');
                           return name;
                         });

}  // namespace
}  // namespace shoal::coordinator
