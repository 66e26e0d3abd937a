// A node id with no process behind it, or a destination that dies before its move commits, must
// never leave keys unavailable: a node is added (or given a bucket) only once it has checked in,
// a switch-then-copy move switches only toward a destination that answered for it, and a
// switched move whose destination is down goes back to its source (docs/design/cluster.md,
// "Switch-then-copy"; coordinator.h).

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tests/support/coordinator_test_fixture.h"

namespace shoal::coordinator {
namespace {

using namespace test;  // NOLINT(google-build-using-namespace): the shared fixture
using transport::Address;

constexpr NodeId kN4{4};
constexpr NodeId kNoProcess{9};

class LostDestinationTest : public CoordinatorTest {
 protected:
  // Every document (of `only`, when set) reads back with its body in `bodies`, and can be
  // written.
  void ExpectEveryKeyServed(const std::vector<std::string>& bodies,
                            std::optional<BucketId> only = std::nullopt) {
    client::Client reader(sim_);
    for (int i = 0; i < kDocuments; ++i) {
      if (only.has_value() && map()->Lookup(PointOf(collection_, Key(i))).id != *only) continue;
      auto got = reader.Get(collection_, Key(i));
      ASSERT_TRUE(got.ok()) << Key(i) << ": " << got.status();
      EXPECT_EQ(got->body, bodies[i]) << Key(i);
    }
    for (int i = 0; i < kDocuments; ++i) {
      if (only.has_value() && map()->Lookup(PointOf(collection_, Key(i))).id != *only) continue;
      auto written = reader.Update(collection_, Key(i), bodies[i]);
      ASSERT_TRUE(written.ok()) << Key(i) << ": " << written.status();
    }
  }

  static std::vector<std::string> InitialBodies() {
    std::vector<std::string> bodies;
    for (int i = 0; i < kDocuments; ++i) bodies.push_back(Body(i));
    return bodies;
  }

  // A switch-then-copy move of kB0 to kN2, held at `failpoint`; kN2 is killed there, and the
  // move must end with the bucket back at kN1 and nothing lost.
  void KillTheDestinationAt(std::string_view failpoint) {
    struct State {
      bool hold = true;
      bool held = false;
      bool moved = false;
      Status move_status;
    };
    auto state = std::make_shared<State>();
    sim_.SetChaosHook([this, state, failpoint](const Address&, std::string_view at) {
      if (at != failpoint || state->held) return false;
      state->held = true;
      while (state->hold) {
        if (!sim_.Sleep(kMs).ok()) break;
      }
      return false;
    });
    Run(/*auto_balance=*/false, [&] {
      struct Release {
        State* s;
        ~Release() { s->hold = false; }
      } release{state.get()};
      std::shared_ptr<Coordinator> c = cluster_->coordinator();
      sim_.Spawn(Address::Coordinator(), "move", [state, c] {
        state->move_status = c->MoveBucket(kB0, kN2, cluster::TransitionMode::kSwitchThenCopy);
        state->moved = true;
      });
      ASSERT_TRUE(WaitFor([&] { return state->held; }));
      ASSERT_TRUE(WaitFor([&] { return cluster_->node(kN2)->epoch() == map()->epoch(); }));
      ASSERT_TRUE(map()->Find(kB0)->transition.has_value());

      // Writes acknowledged by the destination while it served the bucket (through the source).
      std::vector<std::string> bodies = InitialBodies();
      const bool sealed = map()->Find(kB0)->transition->stage == cluster::TransitionStage::kCatchUp;
      if (!sealed) {
        for (int i = 0; i < kDocuments; ++i) {
          if (map()->Lookup(PointOf(collection_, Key(i))).id != kB0) continue;
          bodies[i] = fmt::format(R"({{"i":{},"via":"destination"}})", i);
          auto written = client_->Update(collection_, Key(i), bodies[i]);
          ASSERT_TRUE(written.ok()) << written.status();
        }
      }

      ASSERT_TRUE(cluster_->CrashNode(kN2).ok());
      state->hold = false;
      ASSERT_TRUE(WaitFor([&] { return state->moved; }, 60 * kSecond));
      EXPECT_EQ(state->move_status.code(), StatusCode::kUnavailable) << state->move_status;
      const cluster::BucketPlacement& bucket = *map()->Find(kB0);
      EXPECT_FALSE(bucket.transition.has_value());
      EXPECT_EQ(bucket.replicas, std::vector<NodeId>{kN1});
      EXPECT_EQ(coordinator().progress().aborted, 1u);
      EXPECT_EQ(coordinator().progress().committed, 0u);
      // The bucket is served without n2 (n2's own buckets wait for it: one copy each).
      ExpectEveryKeyServed(bodies, kB0);

      // The destination comes back: nothing of the bucket is served there, and the next move
      // toward it commits with every write.
      ASSERT_TRUE(cluster_->StartNode(kN2).ok());
      ASSERT_TRUE(WaitFor([&] { return cluster_->node(kN2)->epoch() == map()->epoch(); }));
      EXPECT_FALSE(cluster_->node(kN2)->CanAcknowledgeWrite(Point(bucket.range.begin())));
      const Status again = Admin([](Coordinator& coordinator) {
        return coordinator.MoveBucket(kB0, kN2, cluster::TransitionMode::kSwitchThenCopy);
      });
      ASSERT_TRUE(again.ok()) << again;
      EXPECT_EQ(map()->Find(kB0)->replicas, std::vector<NodeId>{kN2});
      ExpectEveryKeyServed(bodies);
    });
    sim_.SetChaosHook(nullptr);
    const auto log = MoveLog();
    ASSERT_EQ(log.count(LogKey(1)), 1u);
    EXPECT_EQ(log.at(LogKey(1)).rfind("ABORT", 0), 0u) << log.at(LogKey(1));
  }
};

// `shoal add-node --id 9` for a node that was never started: refused, and nothing changes.
TEST_F(LostDestinationTest, AddNodeRefusesANodeThatNeverCheckedIn) {
  Run(/*auto_balance=*/true, [&] {
    const ShardMapPtr before = map();
    const Status added = Admin([](Coordinator& c) { return c.AddNode(kNoProcess); });
    EXPECT_EQ(added.code(), StatusCode::kFailedPrecondition) << added;
    EXPECT_NE(added.message().find("n9 has not checked in"), std::string_view::npos) << added;
    // The membership is unchanged (the balancer may have moved buckets during the grace).
    auto members = [](const ShardMapPtr& m) {
      std::vector<NodeId> ids;
      for (const auto& node : m->nodes()) ids.push_back(node.id);
      return ids;
    };
    EXPECT_EQ(members(map()), members(before));
    EXPECT_FALSE(map()->HasNode(kNoProcess));
    ExpectEveryKeyServed(InitialBodies());

    // A node that is running is added at once, even before its first heartbeat arrived.
    ASSERT_TRUE(cluster_->StartNode(kN4).ok());
    const Status started = Admin([](Coordinator& c) { return c.AddNode(kN4); });
    EXPECT_TRUE(started.ok()) << started;
    EXPECT_TRUE(map()->HasNode(kN4));
    const Status again = Admin([](Coordinator& c) { return c.AddNode(kN4); });
    EXPECT_EQ(again.code(), StatusCode::kAlreadyExists) << again;
  });
}

// A bucket is never moved to a node id without a process: the move is refused before BEGIN.
TEST_F(LostDestinationTest, MoveToANodeThatDoesNotAnswerIsRefusedBeforeItBegins) {
  Run(/*auto_balance=*/false, [&] {
    ASSERT_TRUE(cluster_->CrashNode(kN3).ok());
    // Until node_timeout has passed since its last heartbeat the coordinator still counts it.
    ASSERT_TRUE(sim_.Sleep(3 * kSecond).ok());
    for (auto mode :
         {cluster::TransitionMode::kSwitchThenCopy, cluster::TransitionMode::kCopyThenSwitch}) {
      const Status moved = Admin([mode](Coordinator& c) { return c.MoveBucket(kB0, kN3, mode); });
      EXPECT_EQ(moved.code(), StatusCode::kFailedPrecondition) << moved;
    }
    EXPECT_EQ(coordinator().progress().started, 0u);
    EXPECT_EQ(map()->Find(kB0)->replicas, std::vector<NodeId>{kN1});
  });
  EXPECT_TRUE(MoveLog().empty());
}

// Killed after the switch (kCopy): the source holds every write the destination acknowledged.
TEST_F(LostDestinationTest, SwitchedMoveGoesBackToTheSourceWhenTheDestinationDies) {
  KillTheDestinationAt("coordinator.after_switch");
}

// Killed after the seal (kCatchUp): the destination acknowledged nothing since the seal.
TEST_F(LostDestinationTest, SealedMoveGoesBackToTheSourceWhenTheDestinationDies) {
  KillTheDestinationAt("coordinator.after_seal");
}

// A node killed right after it checked in and was added: the balancer's pre-bootstrap toward it
// goes back to the sources, every key stays readable and writable, and remove-node takes it out.
TEST_F(LostDestinationTest, NodeKilledRightAfterItWasAddedLeavesNoKeyUnavailable) {
  Run(/*auto_balance=*/true, [&] {
    ASSERT_TRUE(cluster_->StartNode(kN4).ok());
    const Status added = Admin([](Coordinator& c) { return c.AddNode(kN4); });
    ASSERT_TRUE(added.ok()) << added;
    ASSERT_TRUE(cluster_->CrashNode(kN4).ok());
    // Whatever moves toward n4 began end without it.
    ASSERT_TRUE(WaitFor([&] {
      return map()->TransitionCount() == 0 && coordinator().progress().in_flight == 0 &&
             coordinator().DownNodes().count(kN4) == 1;
    }));
    EXPECT_TRUE(map()->BucketsOf(kN4).empty());
    ExpectEveryKeyServed(InitialBodies());
    const Status removed = Admin([](Coordinator& c) { return c.RemoveNode(kN4); });
    ASSERT_TRUE(removed.ok()) << removed;
    ASSERT_TRUE(WaitFor([&] { return !map()->HasNode(kN4); }));
    ASSERT_TRUE(WaitFor([&] { return coordinator().Balanced().value_or(false); }));
    ExpectEveryKeyServed(InitialBodies());
  });
}

}  // namespace
}  // namespace shoal::coordinator
