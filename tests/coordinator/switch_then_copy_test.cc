// Switch-then-copy moves (paper 002 §5.3-5.4, paper 001 §4.2; docs/design/cluster.md,
// "Switch-then-copy") on the Coordinator's test cluster: the destination serves at once, and
// nothing that took effect at the source is lost at the commit.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "src/storage/errors.h"
#include "tests/support/coordinator_test_fixture.h"

namespace shoal::coordinator {
namespace {

using namespace test;  // NOLINT(google-build-using-namespace): the shared fixture
using transport::Address;

// Switch-then-copy (paper 002 §5.3-5.4): held just after the switch, the destination already
// serves the bucket — reads of documents not yet transferred come from the source, writes are
// applied at the source first — and the transfer that follows keeps every newer version: an
// updated document keeps its update and a deleted one stays deleted.
TEST_F(CoordinatorTest, SwitchThenCopyServesAtOnceAndTransfersWithoutOverwriting) {
  bool hold = true;
  bool held = false;
  sim_.SetChaosHook([&](const Address&, std::string_view failpoint) {
    if (failpoint != "coordinator.after_switch") return false;
    held = true;
    while (hold) {
      if (!sim_.Sleep(kMs).ok()) break;
    }
    return false;
  });
  Run(/*auto_balance=*/false, [&] {
    const ShardMapPtr before = map();
    const storage::PointRange range = RangeOf(*before->Find(kB0));
    std::vector<int> in_bucket;
    for (int i = 0; i < kDocuments; ++i) {
      if (before->Lookup(PointOf(collection_, Key(i))).id == kB0) in_bucket.push_back(i);
    }
    ASSERT_GE(in_bucket.size(), 3u);
    bool moved = false;
    Status move_status;
    std::shared_ptr<Coordinator> c = cluster_->coordinator();
    sim_.Spawn(Address::Coordinator(), "move", [&, c] {
      move_status = c->MoveBucket(kB0, kN2, cluster::TransitionMode::kSwitchThenCopy);
      moved = true;
    });
    ASSERT_TRUE(WaitFor([&] { return held; }));
    ASSERT_TRUE(WaitFor([&] {
      return cluster_->node(kN1)->epoch() == map()->epoch() &&
             cluster_->node(kN2)->epoch() == map()->epoch();
    }));
    const auto& t = *map()->Find(kB0)->transition;
    EXPECT_EQ(t.mode, cluster::TransitionMode::kSwitchThenCopy);
    EXPECT_EQ(t.stage, cluster::TransitionStage::kCopy);
    const Point point(map()->Find(kB0)->range.begin());
    EXPECT_TRUE(cluster_->node(kN2)->CanAcknowledgeWrite(point));
    EXPECT_FALSE(cluster_->node(kN1)->CanAcknowledgeWrite(point));
    EXPECT_EQ(StoredIn(kN2, range), 0u);  // nothing transferred yet

    // A read through the destination comes from the source, and stays at the destination.
    const int read = in_bucket[0], updated = in_bucket[1], deleted = in_bucket[2];
    auto got = client_->Get(collection_, Key(read));
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->body, Body(read));
    EXPECT_EQ(StoredIn(kN2, range), 1u);
    // Writes: decided by the source (a duplicate insert is refused), kept at both.
    ASSERT_TRUE(client_->Update(collection_, Key(updated), R"({"i":"new"})").ok());
    ASSERT_TRUE(client_->Delete(collection_, Key(deleted)).ok());
    auto duplicate = client_->Insert(collection_, Key(read), Body(read));
    EXPECT_TRUE(storage::Is(duplicate.status(), storage::ErrorReason::kDuplicate))
        << duplicate.status();
    auto at_source = cluster_->node(kN1)->store()->Get(collection_, Key(updated));
    ASSERT_TRUE(at_source.ok()) << at_source.status();
    EXPECT_EQ(at_source->body, R"({"i":"new"})");
    // A query sees every live document exactly once.
    auto all = client_->Query(
        client::QueryOptions{.collection = collection_, .filter = {}, .limit = 1000, .cursor = {}});
    ASSERT_TRUE(all.ok()) << all.status();
    EXPECT_EQ(all->documents.size(), static_cast<size_t>(kDocuments - 1));

    hold = false;
    ASSERT_TRUE(WaitFor([&] { return moved; }));
    ASSERT_TRUE(move_status.ok()) << move_status;
    EXPECT_EQ(map()->Find(kB0)->replicas, std::vector<NodeId>{kN2});
    EXPECT_FALSE(map()->Find(kB0)->transition.has_value());
    EXPECT_EQ(StoredIn(kN1, range), 0u);
    EXPECT_EQ(StoredIn(kN2, range), in_bucket.size() - 1);
    client::Client reader(sim_);
    auto after_update = reader.Get(collection_, Key(updated));
    ASSERT_TRUE(after_update.ok()) << after_update.status();
    EXPECT_EQ(after_update->body, R"({"i":"new"})");
    auto after_delete = reader.Get(collection_, Key(deleted));
    EXPECT_TRUE(storage::Is(after_delete.status(), storage::ErrorReason::kNotFound))
        << after_delete.status();
    const MoveProgress progress = coordinator().progress();
    EXPECT_EQ(progress.committed, 1u);
    EXPECT_EQ(progress.finished, 1u);
    EXPECT_EQ(progress.aborted, 0u);
    EXPECT_EQ(progress.in_flight, 0u);
    // The pages were counted as they were copied; the commit counts the same bytes.
    EXPECT_GT(progress.bytes_copied, 0u);
    EXPECT_EQ(progress.bytes_copied, progress.bytes_moved);
  });
  sim_.SetChaosHook(nullptr);
  const auto log = MoveLog();
  ASSERT_EQ(log.count(LogKey(1)), 1u);
  EXPECT_EQ(log.at(LogKey(1)).rfind("DONE", 0), 0u) << log.at(LogKey(1));
}

// A write the destination forwarded whose reply was lost can take effect at the source after
// the transfer read its key. Nobody reads the key before the commit, but an insert saw the write
// (the source refused it as a duplicate). The seal and the catch-up before the commit bring the
// write to the destination, so the key still exists after the commit.
TEST_F(CoordinatorTest, SwitchThenCopyKeepsAForwardedWriteThatTookEffectAfterTheTransfer) {
  // Shared with tasks that may outlive a failed assertion of the test body.
  struct State {
    bool hold_switch = true;
    bool switch_held = false;
    bool hold_write = false;
    bool write_held = false;
    bool hold_transfer = true;
    bool transfer_held = false;
    bool moved = false;
    Status move_status;
    bool upserted = false;
    Status upsert_status;
  };
  auto state = std::make_shared<State>();
  sim_.SetChaosHook([this, state](const Address&, std::string_view failpoint) {
    auto hold = [&](bool State::*flag, bool State::*held) {
      state.get()->*held = true;
      while (state.get()->*flag) {
        if (!sim_.Sleep(kMs).ok()) break;
      }
    };
    if (failpoint == "coordinator.after_switch") {
      hold(&State::hold_switch, &State::switch_held);
    } else if (failpoint == "source.before_forwarded_write" && state->hold_write) {
      hold(&State::hold_write, &State::write_held);
    } else if (failpoint == "destination.after_transfer_page" && !state->transfer_held) {
      hold(&State::hold_transfer, &State::transfer_held);
    }
    return false;
  });
  Run(/*auto_balance=*/false, [&] {
    // Whatever happens below, nothing stays held when the body ends.
    struct Release {
      State* s;
      ~Release() { s->hold_switch = s->hold_write = s->hold_transfer = false; }
    } release{state.get()};
    // A key of bucket 0 that does not exist yet.
    std::string key;
    for (int i = 0; key.empty(); ++i) {
      const std::string candidate = fmt::format("late{}", i);
      if (map()->Lookup(PointOf(collection_, candidate)).id == kB0) key = candidate;
    }
    std::shared_ptr<Coordinator> c = cluster_->coordinator();
    sim_.Spawn(Address::Coordinator(), "move", [state, c] {
      state->move_status = c->MoveBucket(kB0, kN2, cluster::TransitionMode::kSwitchThenCopy);
      state->moved = true;
    });
    ASSERT_TRUE(WaitFor([&] { return state->switch_held; }));
    ASSERT_TRUE(WaitFor([&] {
      return cluster_->node(kN1)->epoch() == map()->epoch() &&
             cluster_->node(kN2)->epoch() == map()->epoch();
    }));

    // The upsert is forwarded to the source and held there.
    state->hold_write = true;
    client::Client* writer = client_.get();
    sim_.Spawn(Address::Client(2), "upsert", [state, writer, key, collection = collection_] {
      state->upsert_status = writer->Upsert(collection, key, R"({"late":1})").status();
      state->upserted = true;
    });
    ASSERT_TRUE(WaitFor([&] { return state->write_held; }));
    // Past the destination's timeout for it: its reply will be too late, so its outcome is
    // unknown to the client and the destination will not hold it.
    ASSERT_TRUE(sim_.Sleep(500 * kMs).ok());
    // The transfer reads the whole bucket (without the key) and is held after its page, well
    // within the coordinator's timeout for it; meanwhile the upsert takes effect at the source.
    state->hold_switch = false;
    ASSERT_TRUE(WaitFor([&] { return state->transfer_held; }, 10 * kSecond));
    state->hold_write = false;
    ASSERT_TRUE(WaitFor([&] { return state->upserted; }, 10 * kSecond));
    EXPECT_EQ(state->upsert_status.code(), StatusCode::kUnknown) << state->upsert_status;
    EXPECT_TRUE(cluster_->node(kN1)->store()->Get(collection_, key).ok());
    EXPECT_FALSE(cluster_->node(kN2)->store()->Get(collection_, key).ok());
    // An insert sees it: the source, the complete copy, refuses it.
    auto duplicate = client_->Insert(collection_, key, R"({"late":2})");
    EXPECT_TRUE(storage::Is(duplicate.status(), storage::ErrorReason::kDuplicate))
        << duplicate.status();
    state->hold_transfer = false;
    ASSERT_TRUE(WaitFor([&] { return state->moved; }));
    ASSERT_TRUE(state->move_status.ok()) << state->move_status;
    EXPECT_FALSE(map()->Find(kB0)->transition.has_value());
    client::Client reader(sim_);
    auto got = reader.Get(collection_, key);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->body, R"({"late":1})");
  });
  sim_.SetChaosHook(nullptr);
  const auto log = MoveLog();
  ASSERT_EQ(log.count(LogKey(1)), 1u);
  EXPECT_EQ(log.at(LogKey(1)).rfind("DONE", 0), 0u) << log.at(LogKey(1));
}

}  // namespace
}  // namespace shoal::coordinator
