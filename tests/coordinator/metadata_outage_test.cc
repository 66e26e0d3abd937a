// A bucket move across an outage of the metadata store (docs/design/zookeeper.md, "ZooKeeper
// down"), on the Coordinator's simulated cluster: the store stops answering at the move's
// coordinator.before_commit, after the source fenced the bucket. The coordinator keeps running
// (it does not lose its leadership, as when its ZooKeeper session outlives the outage), so no
// recovery at a restart helps: the move's task ends, and the balancer loop must resolve the
// transition it left behind (coordinator.h, "Orphans") once the store answers again.

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "src/coordinator/coordinator.h"
#include "tests/support/coordinator_test_fixture.h"

namespace shoal::coordinator {
namespace {

using namespace test;  // NOLINT(google-build-using-namespace): the shared fixture

enum class Outage : uint8_t {
  kNone,
  kDown,  // every read and write fails with kUnavailable and changes nothing
  // The next Commit is applied but answered kUnavailable (its reply was lost), then kDown.
  kLoseNextReply,
};

// A MetadataStore that fails like an unreachable ZooKeeper on demand. Sessions and watches pass
// through (the coordinator uses neither). Thread-safe like the store it wraps.
class OutageStore final : public metadata::MetadataStore {
 public:
  explicit OutageStore(std::unique_ptr<metadata::MetadataStore> store,
                       std::shared_ptr<std::atomic<Outage>> outage)
      : store_(std::move(store)), outage_(std::move(outage)) {}

  [[nodiscard]] StatusOr<metadata::Versioned> Get(std::string_view key) const override {
    SHOAL_RETURN_IF_ERROR(Reachable());
    return store_->Get(key);
  }
  [[nodiscard]] StatusOr<uint64_t> Put(std::string_view key, std::string_view value,
                                       uint64_t expected_version) override {
    SHOAL_RETURN_IF_ERROR(Reachable());
    return store_->Put(key, value, expected_version);
  }
  [[nodiscard]] Status Delete(std::string_view key, uint64_t expected_version) override {
    SHOAL_RETURN_IF_ERROR(Reachable());
    return store_->Delete(key, expected_version);
  }
  [[nodiscard]] Status Commit(std::span<const metadata::MetaOp> ops) override {
    Outage expected = Outage::kLoseNextReply;
    if (outage_->compare_exchange_strong(expected, Outage::kDown)) {
      SHOAL_RETURN_IF_ERROR(store_->Commit(ops));
      return UnavailableError("metadata reply lost");
    }
    SHOAL_RETURN_IF_ERROR(Reachable());
    return store_->Commit(ops);
  }
  [[nodiscard]] StatusOr<std::vector<std::pair<std::string, metadata::Versioned>>> List(
      std::string_view prefix) const override {
    SHOAL_RETURN_IF_ERROR(Reachable());
    return store_->List(prefix);
  }
  [[nodiscard]] metadata::WatchId Watch(
      std::string prefix, std::function<void(const metadata::WatchEvent&)> fn) override {
    return store_->Watch(std::move(prefix), std::move(fn));
  }
  void Unwatch(metadata::WatchId id) override { store_->Unwatch(id); }
  [[nodiscard]] StatusOr<metadata::SessionId> OpenSession(std::chrono::milliseconds ttl) override {
    return store_->OpenSession(ttl);
  }
  [[nodiscard]] Status KeepAlive(metadata::SessionId session) override {
    return store_->KeepAlive(session);
  }
  [[nodiscard]] Status CloseSession(metadata::SessionId session) override {
    return store_->CloseSession(session);
  }
  [[nodiscard]] StatusOr<uint64_t> PutEphemeral(metadata::SessionId session, std::string_view key,
                                                std::string_view value,
                                                uint64_t expected_version) override {
    return store_->PutEphemeral(session, key, value, expected_version);
  }
  void ExpireSessions() override { store_->ExpireSessions(); }

 private:
  [[nodiscard]] Status Reachable() const {
    if (outage_->load() == Outage::kNone) return OkStatus();
    return UnavailableError("metadata store unreachable");
  }

  std::unique_ptr<metadata::MetadataStore> store_;
  std::shared_ptr<std::atomic<Outage>> outage_;
};

class MetadataOutageTest : public CoordinatorTest, public ::testing::WithParamInterface<Outage> {
 protected:
  MetadataOutageTest() {
    wrap_metadata_ = [outage = outage_](std::unique_ptr<metadata::MetadataStore> store) {
      return std::make_unique<OutageStore>(std::move(store), outage);
    };
  }

  std::shared_ptr<std::atomic<Outage>> outage_ = std::make_shared<std::atomic<Outage>>();
};

// The store fails from the move's commit on (its COMMIT is lost, or its reply is): the move's
// task ends with the bucket fenced at the source and the transition in the map. It stays so
// while the store is down; once it is back, the balancer loop stores the outcome: ABORT when
// the commit was not applied, DONE when it was. One owner per bucket, every document readable,
// the bucket takes writes again.
TEST_P(MetadataOutageTest, MoveEndsCommittedOrAbortedOnceTheStoreIsBack) {
  const Outage outage = GetParam();
  const bool committed = outage == Outage::kLoseNextReply;
  sim_.SetChaosHook([&](const Address& process, std::string_view failpoint) {
    if (process == Address::Coordinator() && failpoint == "coordinator.before_commit") {
      outage_->store(outage);
    }
    return false;  // no crash: the coordinator runs on
  });
  Run(/*auto_balance=*/false, [&] {
    const Point point(map()->Find(kB0)->range.begin());
    Status moved = Admin([](Coordinator& c) { return c.MoveBucket(kB0, kN2); });
    EXPECT_EQ(moved.code(), StatusCode::kUnavailable) << moved;
    EXPECT_EQ(outage_->load(), Outage::kDown);

    // Down for 3 s: the transition stays, and nobody acknowledges writes to b0.
    ASSERT_TRUE(sim_.Sleep(3 * kSecond).ok());
    ASSERT_TRUE(map()->Find(kB0)->transition.has_value());
    EXPECT_FALSE(cluster_->node(kN1)->CanAcknowledgeWrite(point));
    EXPECT_FALSE(cluster_->node(kN2)->CanAcknowledgeWrite(point));

    outage_->store(Outage::kNone);
    ASSERT_TRUE(WaitFor([&] { return map()->TransitionCount() == 0; }, 30 * kSecond));
    ExpectB0EndedOn(committed);
    const MoveProgress progress = coordinator().progress();
    EXPECT_EQ(progress.in_flight, 0u);
    EXPECT_EQ(progress.aborted, committed ? 0u : 1u);
  });
  sim_.SetChaosHook(nullptr);
  const auto log = MoveLog();
  ASSERT_EQ(log.count(LogKey(1)), 1u);
  EXPECT_EQ(log.at(LogKey(1)).rfind(committed ? "DONE" : "ABORT", 0), 0u) << log.at(LogKey(1));
}

// A drain interrupted by the outage: the balancer must not call the cluster balanced while the
// leaving node still holds buckets. Resolving the orphaned transition empties the map's
// transitions before the next round plans the rest of the drain; a planner verdict from before
// that (taken while the transition blocked the node) must not count. Checked every 100 us of
// simulated time, shorter than the round's load calls.
TEST_P(MetadataOutageTest, DrainIsNotBalancedUntilTheLeavingNodeIsGone) {
  const Outage outage = GetParam();
  bool failed_once = false;
  sim_.SetChaosHook([&](const Address& process, std::string_view failpoint) {
    if (!failed_once && process == Address::Coordinator() &&
        failpoint == "coordinator.before_commit") {
      failed_once = true;
      outage_->store(outage);
    }
    return false;
  });
  Run(/*auto_balance=*/true, [&] {
    ASSERT_FALSE(map()->BucketsOf(kN3).empty());
    ASSERT_TRUE(Admin([](Coordinator& c) { return c.RemoveNode(kN3); }).ok());
    ASSERT_TRUE(WaitFor([&] { return failed_once; }));
    ASSERT_TRUE(sim_.Sleep(3 * kSecond).ok());
    outage_->store(Outage::kNone);
    int balanced_too_early = 0;
    const Micros deadline = sim_.Now() + 60 * kSecond;
    while (map()->HasNode(kN3) || map()->TransitionCount() != 0) {
      auto balanced = coordinator().Balanced();
      if (balanced.ok() && *balanced) ++balanced_too_early;
      ASSERT_LT(sim_.Now(), deadline) << map()->DebugString();
      ASSERT_TRUE(sim_.Sleep(100).ok());
    }
    EXPECT_EQ(balanced_too_early, 0) << "Balanced() was true while n3 still held buckets";
    ASSERT_TRUE(WaitFor([&] {
      auto balanced = coordinator().Balanced();
      return balanced.ok() && *balanced;
    }));
    ExpectAllDocumentsReadable();
  });
  sim_.SetChaosHook(nullptr);
}

INSTANTIATE_TEST_SUITE_P(Outages, MetadataOutageTest,
                         ::testing::Values(Outage::kDown, Outage::kLoseNextReply),
                         [](const ::testing::TestParamInfo<Outage>& info) {
                           return std::string(info.param == Outage::kDown ? "CommitLost"
                                                                          : "CommitReplyLost");
                         });

}  // namespace
}  // namespace shoal::coordinator
