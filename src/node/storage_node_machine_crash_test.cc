// FAILURE-PATTERNS 2 (docs/design/failure-patterns.md): a machine crash (power loss) during a
// bucket move loses no state that a node acknowledged. The failure pattern: a destination
// acknowledges an ingest or a catch-up round whose writes sit in its page cache only, a power loss
// takes them, and the commit then hands the bucket to a node that lost writes; or a source loses
// writes it acknowledged before its fence. Both nodes' stores sync every write
// (SyncPolicy::kEveryWrite) through a SyncTrackingFileSystem each; right after an acknowledgement
// the test copies a node's store as a power loss would leave it (every WAL file cut to its synced
// length), opens the copy, and compares it key by key (version, tombstone, body) with the live
// store. A product that acknowledged before syncing fails these tests. CopyDurable keeps SST and
// MANIFEST files whole, so it checks what the WAL carries (documents, deletes, version
// reservations), not RocksDB's own fsyncs of an ingested file.
//
// The move of b0 from n1 to n2 runs by hand, as in storage_node_move_test.cc, on the shared
// fixture's maps and helpers; only the nodes' store options differ.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "src/node/storage_node_test_fixture.h"
#include "src/storage/sync_tracking_fs.h"

namespace shoal::node {
namespace {

using namespace test;  // NOLINT(google-build-using-namespace): the shared fixture
using storage::Document;

// The acknowledgements of a move after which a test crashes a machine.
enum class Ack { kIngest, kCatchUpRound, kFence, kDrain, kDrop };

class MachineCrashTest : public StorageNodeTest {
 protected:
  ~MachineCrashTest() override {
    // The stores close before the file systems they write through go.
    sim_.Shutdown();
    nodes_.clear();
  }

  // Node `id` on `data_dir` syncs every write, through a fresh SyncTrackingFileSystem (Run
  // starts both nodes with it).
  bool StartNode(NodeId id, const std::string& data_dir) override {
    fs_[id] = std::make_shared<storage::SyncTrackingFileSystem>();
    envs_.push_back(storage::SyncTrackingFileSystem::NewEnv(fs_[id]));
    data_dirs_[id] = data_dir;
    NodeOptions options = TestNodeOptions(id, data_dir);
    options.store.sync = storage::SyncPolicy::kEveryWrite;
    options.store.env = envs_.back().get();
    // Every version a node stamps or observes above the last one needs a new reservation, a WAL
    // write: an ingest or a catch-up must then sync its own reservation before it answers.
    options.store.version_block = 1;
    return OpenAndStart(options);
  }

  // Node `id`'s store as a machine crash right now would leave it, opened (null, with a test
  // failure, if the copy or the open fails).
  std::unique_ptr<storage::BucketStore> CrashCopyOf(NodeId id) {
    storage::StoreOptions reopen;
    test::UseSmallTestStore(reopen);
    auto store = fs_.at(id)->OpenDurableCopy(
        data_dirs_.at(id) + "/store",
        fmt::format("{}/crash-{}-{}", dir_, id.value(), crash_copies_++), reopen);
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? std::move(*store) : nullptr;
  }

  // A machine crash of n1: it stops, and starts again on the crash copy of its store.
  void RestartN1AfterAMachineCrash() {
    const std::string data_dir = fmt::format("{}/node-1-after-crash", dir_);
    const Status copied =
        fs_.at(kN1)->CopyDurable(data_dirs_.at(kN1) + "/store", data_dir + "/store");
    ASSERT_TRUE(copied.ok()) << copied;
    ASSERT_TRUE(node(kN1).Close().ok());
    ASSERT_TRUE(StartNode(kN1, data_dir));
  }

  // Every entry of `bucket`'s range (of the initial map) in `store`, tombstones included.
  std::vector<Document> DocumentsIn(const storage::BucketStore& store, BucketId bucket) const {
    std::vector<Document> out;
    storage::ScanOptions scan;
    scan.range = RangeOf(*maps_.initial, bucket);
    scan.collection = kDocs;
    scan.include_tombstones = true;
    const Status s = store.ForEach(scan, [&](const Document& d) {
      out.push_back(d);
      return true;
    });
    EXPECT_TRUE(s.ok()) << s;
    return out;
  }

  // Key by key, the crash copy's entries equal `reference`'s: version, tombstone and body.
  static void ExpectSameDocuments(std::string_view what, const std::vector<Document>& copy,
                                  const std::vector<Document>& reference) {
    std::map<std::string, Document> in_copy;
    for (const Document& d : copy) in_copy[d.primary_key] = d;
    for (const Document& d : reference) {
      auto it = in_copy.find(d.primary_key);
      if (it == in_copy.end()) {
        ADD_FAILURE() << what << ": the crash copy lost " << d.DebugString();
        continue;
      }
      EXPECT_TRUE(it->second == d) << what << ": the crash copy has " << it->second.DebugString()
                                   << ", not " << d.DebugString();
      in_copy.erase(it);
    }
    for (const auto& [key, d] : in_copy) {
      ADD_FAILURE() << what << ": the crash copy holds " << d.DebugString() << " in addition";
    }
  }

  // Every write node `id` acknowledged is in `store` as acknowledged (a delete as a tombstone).
  void ExpectHoldsAcknowledged(std::string_view what, const storage::BucketStore& store,
                               NodeId id) const {
    storage::GetOptions with_tombstones;
    with_tombstones.include_tombstones = true;
    for (const auto& [key, acknowledged] : acknowledged_.at(id)) {
      auto stored = store.Get(kDocs, key, with_tombstones);
      ASSERT_TRUE(stored.ok()) << what << ": " << key << ": " << stored.status();
      EXPECT_TRUE(*stored == acknowledged) << what << ": " << stored->DebugString()
                                           << ", acknowledged " << acknowledged.DebugString();
    }
  }

  // A client write that `to` must acknowledge; recorded as acknowledged by `to`.
  void Acknowledged(NodeId to, const ShardMapPtr& map, WriteOp op, const std::string& key,
                    const std::string& body = "") {
    auto response = Write(to, map, op, key, body);
    ASSERT_TRUE(StatusOf(response).ok()) << key << ": " << StatusOf(response);
    const bool deleted = op == WriteOp::kDelete;
    acknowledged_[to][key] =
        Document{.collection = kDocs,
                 .primary_key = key,
                 .body = deleted ? "" : body,
                 .version = std::get<transport::WriteResponse>(response->body).version,
                 .tombstone = deleted};
  }

  // A catch-up of b0 at n2 from `after`: a round, or with `until` the drain to the fence.
  transport::CatchUpResponse CatchUp(uint64_t after, std::optional<uint64_t> until) {
    auto caught = Call(kN2, transport::CatchUpRequest{.move = kMove,
                                                      .bucket = kB0,
                                                      .source = kN1,
                                                      .after_sequence = after,
                                                      .until_sequence = until,
                                                      .stop_below = until ? 0u : 64u});
    EXPECT_TRUE(StatusOf(caught).ok()) << StatusOf(caught);
    if (!StatusOf(caught).ok()) return {};
    return std::get<transport::CatchUpResponse>(caught->body);
  }

  std::string B0(int i) const { return KeyIn(kB0, i); }
  std::string B1(int i) const { return KeyIn(kB1, i); }

  // Moves b0 from n1 to n2 by hand while a writer's writes are acknowledged, by n1 for b0 and by
  // n2 for b1: export and ingest, two catch-up rounds, fence, drain, commit, the source's drop.
  // Calls `after` right after each acknowledgement of a move step (nothing else runs then); the
  // move goes on while it returns true.
  void MoveByHand(const std::function<bool(Ack)>& after) {
    for (int i = 0; i < 6; ++i) {
      Acknowledged(kN1, maps_.initial, WriteOp::kInsert, B0(i), fmt::format(R"({{"v":{}}})", i));
    }
    Acknowledged(kN1, maps_.initial, WriteOp::kUpsert, B0(0), R"({"v":"upserted"})");
    Acknowledged(kN1, maps_.initial, WriteOp::kDelete, B0(5));  // a tombstone in the snapshot
    Acknowledged(kN2, maps_.initial, WriteOp::kInsert, B1(0), R"({"b1":0})");
    Acknowledged(kN2, maps_.initial, WriteOp::kInsert, B1(1), R"({"b1":1})");
    if (HasFatalFailure()) return;

    Publish(maps_.copy);
    auto exported = Call(kN1, transport::ExportBucketRequest{.move = kMove, .bucket = kB0});
    ASSERT_TRUE(StatusOf(exported).ok()) << StatusOf(exported);
    exported_ = std::get<transport::ExportBucketResponse>(exported->body).exported;
    source_at_export_ = DocumentsIn(*node(kN1).store(), kB0);
    version_before_ingest_ = node(kN2).store()->LastVersion();
    auto ingested = Call(
        kN2, transport::IngestBucketRequest{.move = kMove, .bucket = kB0, .exported = exported_});
    ASSERT_TRUE(StatusOf(ingested).ok()) << StatusOf(ingested);
    if (!after(Ack::kIngest) || HasFatalFailure()) return;

    Acknowledged(kN1, maps_.copy, WriteOp::kUpdate, B0(1), R"({"v":"updated"})");
    Acknowledged(kN1, maps_.copy, WriteOp::kDelete, B0(2));
    Acknowledged(kN1, maps_.copy, WriteOp::kInsert, B0(6), R"({"v":"inserted"})");
    Acknowledged(kN2, maps_.copy, WriteOp::kUpsert, B1(0), R"({"b1":"upserted"})");
    if (HasFatalFailure()) return;
    Publish(maps_.catch_up);
    last_catch_up_ = CatchUp(exported_.sequence, std::nullopt);
    if (!after(Ack::kCatchUpRound) || HasFatalFailure()) return;

    Acknowledged(kN1, maps_.catch_up, WriteOp::kUpsert, B0(3), R"({"v":"upserted"})");
    Acknowledged(kN1, maps_.catch_up, WriteOp::kInsert, B0(7), R"({"v":"late"})");
    Acknowledged(kN1, maps_.catch_up, WriteOp::kDelete, B0(6));
    Acknowledged(kN1, maps_.catch_up, WriteOp::kUpsert, B0(5), R"({"v":"back"})");
    if (HasFatalFailure()) return;
    last_catch_up_ = CatchUp(last_catch_up_.applied_sequence, std::nullopt);
    if (!after(Ack::kCatchUpRound) || HasFatalFailure()) return;

    Acknowledged(kN1, maps_.catch_up, WriteOp::kUpsert, B0(1), R"({"v":"last"})");
    Acknowledged(kN1, maps_.catch_up, WriteOp::kDelete, B0(4));
    Acknowledged(kN2, maps_.catch_up, WriteOp::kDelete, B1(1));
    if (HasFatalFailure()) return;
    Publish(maps_.prepare);
    auto fenced = Fence(kN1, kMove, kB0);
    ASSERT_TRUE(StatusOf(fenced).ok()) << StatusOf(fenced);
    fence_sequence_ = std::get<transport::FenceResponse>(fenced->body).sequence;
    if (!after(Ack::kFence) || HasFatalFailure()) return;

    last_catch_up_ = CatchUp(last_catch_up_.applied_sequence, fence_sequence_);
    if (!after(Ack::kDrain) || HasFatalFailure()) return;

    Publish(maps_.committed);
    auto dropped = Drop(kN1, maps_.committed, kB0);
    ASSERT_TRUE(StatusOf(dropped).ok()) << StatusOf(dropped);
    (void)after(Ack::kDrop);
  }

  std::map<NodeId, std::shared_ptr<storage::SyncTrackingFileSystem>> fs_;
  std::vector<std::unique_ptr<rocksdb::Env>> envs_;  // of every node started, restarts included
  std::map<NodeId, std::string> data_dirs_;
  int crash_copies_ = 0;
  // The last acknowledged state of each key, by the node that acknowledged it.
  std::map<NodeId, std::map<std::string, Document>> acknowledged_;
  storage::ExportedRange exported_;
  std::vector<Document> source_at_export_;  // b0 at n1 when the export answered
  uint64_t version_before_ingest_ = 0;      // n2's clock before the ingest
  transport::CatchUpResponse last_catch_up_;
  uint64_t fence_sequence_ = 0;
};

// The ack checked: n2's OK to IngestBucket. Its crash copy holds the snapshot as exported, with
// the source's versions and tombstones, and a version clock above them (the reservation the
// ingest observed is a synced WAL write). The node keeps no bucket states in its store (roles
// come from the coordinator's map; the catch-up position is in memory, so a restarted destination
// answers STALE_MOVE and the move aborts, see NodeRestartTest): the copy's directory must equal
// the live one.
TEST_F(MachineCrashTest, DestinationCrashAfterItsIngestKeepsTheSnapshot) {
  Run([&] {
    bool crashed = false;
    MoveByHand([&](Ack ack) {
      if (ack != Ack::kIngest) return true;
      crashed = true;
      auto copy = CrashCopyOf(kN2);
      if (copy == nullptr) return false;
      EXPECT_EQ(exported_.entries, source_at_export_.size());
      ExpectSameDocuments("snapshot", DocumentsIn(*copy, kB0), source_at_export_);
      ExpectSameDocuments("live", DocumentsIn(*copy, kB0), DocumentsIn(*node(kN2).store(), kB0));
      // Otherwise the reservation needs no new write and the check below checks nothing.
      EXPECT_GT(exported_.max_version, version_before_ingest_);
      EXPECT_GE(copy->LastVersion(), exported_.max_version);
      EXPECT_EQ(copy->ListBuckets(), node(kN2).store()->ListBuckets());
      ExpectHoldsAcknowledged("n2's own writes", *copy, kN2);
      return false;
    });
    EXPECT_TRUE(crashed);
  });
}

// The acks checked: n2's OK to each catch-up round, and to the drain to the fence's sequence.
// Right after each, its crash copy of b0 equals its live store and the source's state, key by
// key: every change the round applied is durable, tombstones and versions included.
TEST_F(MachineCrashTest, DestinationCrashAfterACatchUpRoundOrTheDrainKeepsWhatItApplied) {
  Run([&] {
    int crashes = 0;
    MoveByHand([&](Ack ack) {
      if (ack != Ack::kCatchUpRound && ack != Ack::kDrain) return true;
      ++crashes;
      const std::string what =
          fmt::format("crash {} ({})", crashes, ack == Ack::kDrain ? "drain" : "catch-up round");
      EXPECT_GT(last_catch_up_.applied, 0u) << what;  // the step wrote something to lose
      auto copy = CrashCopyOf(kN2);
      if (copy == nullptr) return false;
      const std::vector<Document> in_copy = DocumentsIn(*copy, kB0);
      ExpectSameDocuments(what + " vs live", in_copy, DocumentsIn(*node(kN2).store(), kB0));
      ExpectSameDocuments(what + " vs source", in_copy, DocumentsIn(*node(kN1).store(), kB0));
      for (const Document& d : in_copy) EXPECT_GE(copy->LastVersion(), d.version) << what;
      ExpectHoldsAcknowledged(what + ", n2's own writes", *copy, kN2);
      return ack != Ack::kDrain;
    });
    EXPECT_EQ(crashes, 3);
  });
}

// The ack checked: n1's OK to Fence, whose sequence bounds every write n1 acknowledged for b0.
// Its crash copy holds each of those writes. The fence itself is in memory only (the node keeps
// no bucket states in its store); by the design (cluster.md, FENCE and the kPrepare step) the
// coordinator stores kPrepare before it sends the fence, so n1, restarted on the crash copy,
// learns kPrepare from the coordinator's map and stays fenced: it acknowledges neither a write
// nor a read of b0. The drain then reads the restarted source's log up to the fence's sequence,
// and the commit hands n2 every acknowledged write.
TEST_F(MachineCrashTest, SourceCrashAfterItsFenceKeepsItsWritesAndStaysFenced) {
  Run([&] {
    bool crashed = false;
    MoveByHand([&](Ack ack) {
      if (ack != Ack::kFence) return true;
      crashed = true;
      auto copy = CrashCopyOf(kN1);
      if (copy == nullptr) return false;
      ExpectSameDocuments("source at the fence", DocumentsIn(*copy, kB0),
                          DocumentsIn(*node(kN1).store(), kB0));
      ExpectHoldsAcknowledged("source at the fence", *copy, kN1);
      EXPECT_EQ(copy->ListBuckets(), node(kN1).store()->ListBuckets());
      EXPECT_GE(copy->LatestSequence(), fence_sequence_);
      copy.reset();

      RestartN1AfterAMachineCrash();
      if (HasFatalFailure()) return false;
      const std::string key = B0(0);
      auto write = Write(kN1, maps_.prepare, WriteOp::kUpsert, key, R"({"v":"after the crash"})");
      EXPECT_EQ(transport::ClusterErrorOf(StatusOf(write)), ClusterError::kNotServing)
          << StatusOf(write);
      auto read = Get(kN1, maps_.prepare, key);
      EXPECT_EQ(transport::ClusterErrorOf(StatusOf(read)), ClusterError::kNotServing)
          << StatusOf(read);
      EXPECT_EQ(node(kN1).RoleOf(kB0), LocalRole::kLeaving);
      EXPECT_EQ(node(kN1).epoch(), maps_.prepare->epoch());

      last_catch_up_ = CatchUp(last_catch_up_.applied_sequence, fence_sequence_);
      EXPECT_GE(last_catch_up_.applied_sequence, fence_sequence_);
      Publish(maps_.committed);
      for (const auto& [k, acknowledged] : acknowledged_.at(kN1)) {
        auto got = Get(kN2, maps_.committed, k);
        if (acknowledged.tombstone) {
          EXPECT_TRUE(storage::Is(StatusOf(got), storage::ErrorReason::kNotFound))
              << k << ": " << StatusOf(got);
          continue;
        }
        if (!StatusOf(got).ok()) {
          ADD_FAILURE() << k << ": " << StatusOf(got);
          continue;
        }
        const Document& document = std::get<transport::GetResponse>(got->body).document;
        EXPECT_EQ(document.body, acknowledged.body) << k;
        EXPECT_EQ(document.version, acknowledged.version) << k;
      }
      return false;
    });
    EXPECT_TRUE(crashed);
  });
}

// The ack checked: n1's OK to DropBucket under the committed map. The drop is logged before it
// answers (BucketStore::DropRange: "logically empty from here on, also after a crash"), so n1's
// crash copy holds nothing of b0, not even tombstones. A crash of both machines then leaves b0
// whole on n2 only: its crash copy equals the source's state at the fence.
TEST_F(MachineCrashTest, SourceCrashAfterItsDropLeavesNothingAndTheDestinationHoldsTheBucket) {
  Run([&] {
    std::vector<Document> source_at_fence;
    bool crashed = false;
    MoveByHand([&](Ack ack) {
      if (ack == Ack::kFence) source_at_fence = DocumentsIn(*node(kN1).store(), kB0);
      if (ack != Ack::kDrop) return true;
      crashed = true;
      EXPECT_FALSE(source_at_fence.empty());
      EXPECT_TRUE(DocumentsIn(*node(kN1).store(), kB0).empty());
      auto source = CrashCopyOf(kN1);
      auto destination = CrashCopyOf(kN2);
      if (source == nullptr || destination == nullptr) return false;
      ExpectSameDocuments("source after the drop", DocumentsIn(*source, kB0), {});
      ExpectSameDocuments("destination after the drop", DocumentsIn(*destination, kB0),
                          source_at_fence);
      ExpectHoldsAcknowledged("n2's own writes", *destination, kN2);
      return false;
    });
    EXPECT_TRUE(crashed);
  });
}

}  // namespace
}  // namespace shoal::node
