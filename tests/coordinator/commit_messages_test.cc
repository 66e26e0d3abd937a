// FAILURE-PATTERNS 1 (docs/design/failure-patterns.md): two writable owners at the commit
// instant. One chosen message of a copy-then-switch move's commit step is lost, or delayed: the
// Fence request or its reply, the drain's CatchUp request or its reply, or the COMMIT map pushed
// to the source or to the destination. A writer updates the bucket's documents all through the
// move. Checked:
//   - before every scheduling step of the simulation, at most one node can acknowledge a write to
//     the bucket (ARCHITECTURE.md §3, one writable owner);
//   - the move ends, committed or aborted (then a retry with no loss commits);
//   - every document holds its last acknowledged update, or a later one of unknown outcome;
//   - exactly the map's owner acknowledges writes at the end.

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "src/coordinator/coordinator.h"
#include "tests/support/coordinator_test_fixture.h"

namespace shoal::coordinator {
namespace {

using namespace test;  // NOLINT(google-build-using-namespace): the shared fixture
using transport::SimRuntime;

enum class Target : uint8_t { kFence, kDrain, kCommitMapToSource, kCommitMapToDestination };

struct LostMessage {
  const char* name;
  Target target;
  SimRuntime::MessageLeg leg;
  transport::Micros extra_delay;  // 0: lost; else delivered this much later
};

// Whether `request` from the coordinator to `to` is the message `target` names, for a move of
// b0 from n1 to n2.
bool IsTarget(Target target, const Address& to, const transport::Request& request) {
  switch (target) {
    case Target::kFence:
      return std::holds_alternative<transport::FenceRequest>(request);
    case Target::kDrain: {
      const auto* catch_up = std::get_if<transport::CatchUpRequest>(&request);
      return catch_up != nullptr && catch_up->until_sequence.has_value();
    }
    case Target::kCommitMapToSource:
    case Target::kCommitMapToDestination: {
      const auto* install = std::get_if<transport::InstallMapRequest>(&request);
      if (install == nullptr || install->state.map == nullptr) return false;
      const cluster::BucketPlacement* b0 = install->state.map->Find(kB0);
      const bool commit = b0 != nullptr && b0->transition.has_value() &&
                          b0->transition->stage == cluster::TransitionStage::kCommitted;
      const NodeId node = target == Target::kCommitMapToSource ? kN1 : kN2;
      return commit && to == Address::Node(node);
    }
  }
  return false;
}

class CommitMessageTest : public CoordinatorTest,
                          public ::testing::WithParamInterface<LostMessage> {};

TEST_P(CommitMessageTest, AtMostOneOwnerAndNoAcknowledgedWriteLost) {
  const LostMessage lost = GetParam();
  int hits = 0;  // the first matching message only
  sim_.SetMessageHook([&](const Address& from, const Address& to, const transport::Request& request,
                          SimRuntime::MessageLeg leg) {
    SimRuntime::MessageFate fate;
    if (hits == 0 && leg == lost.leg && from == Address::Coordinator() &&
        IsTarget(lost.target, to, request)) {
      ++hits;
      fate.lose = lost.extra_delay == 0;
      fate.extra_delay = lost.extra_delay;
    }
    return fate;
  });
  // Before every step: at most one node can acknowledge a write to b0.
  Point b0_point;
  bool watching = false;
  int owners_max = 0;
  sim_.SetStepObserver([&](std::string_view) {
    if (!watching) return;
    int owners = 0;
    for (NodeId id : {kN1, kN2, kN3}) {
      std::shared_ptr<node::StorageNode> n = cluster_->node(id);
      if (n != nullptr && n->CanAcknowledgeWrite(b0_point)) ++owners;
    }
    owners_max = std::max(owners_max, owners);
  });
  Run(/*auto_balance=*/false, [&] {
    ASSERT_EQ(map()->Find(kB0)->replicas, std::vector<NodeId>{kN1});
    b0_point = Point(map()->Find(kB0)->range.begin());
    std::vector<int> in_b0;
    for (int i = 0; i < kDocuments; ++i) {
      if (map()->Lookup(PointOf(collection_, Key(i))).id == kB0) in_b0.push_back(i);
    }
    ASSERT_FALSE(in_b0.empty());
    watching = true;

    auto w = StartRoundWriter(in_b0, kMs);
    ASSERT_TRUE(WaitFor([&] { return w->acknowledged_writes > 0; }));
    Status moved = Admin([](Coordinator& c) { return c.MoveBucket(kB0, kN2); });
    EXPECT_EQ(hits, 1) << lost.name << " was not sent";
    if (!moved.ok()) {
      // Aborted: the source serves again, and a retry (no message lost) commits.
      EXPECT_EQ(map()->Find(kB0)->replicas, std::vector<NodeId>{kN1}) << moved;
      Status retried = Admin([](Coordinator& c) { return c.MoveBucket(kB0, kN2); });
      ASSERT_TRUE(retried.ok()) << retried;
    }
    // Writes go on after the move, through whichever node the map now names.
    const uint64_t after_move = w->acknowledged_writes;
    ASSERT_TRUE(WaitFor([&] { return w->acknowledged_writes > after_move; }));
    StopRoundWriter(*w);
    watching = false;
    EXPECT_EQ(owners_max, 1) << "two nodes could acknowledge writes to b0 at once";

    ExpectNoAcknowledgedRoundLost(*w, in_b0);
    client::Client restorer(sim_);
    for (int i : in_b0) {
      auto restored = restorer.Update(collection_, Key(i), Body(i));
      EXPECT_TRUE(restored.ok()) << Key(i) << ": " << restored.status();
    }
    ExpectB0EndedOn(/*committed=*/true);
  });
  sim_.SetMessageHook(nullptr);
  sim_.SetStepObserver(nullptr);
}

INSTANTIATE_TEST_SUITE_P(
    Messages, CommitMessageTest,
    ::testing::Values(
        LostMessage{"fence_request", Target::kFence, SimRuntime::MessageLeg::kRequest, 0},
        LostMessage{"fence_reply", Target::kFence, SimRuntime::MessageLeg::kReply, 0},
        LostMessage{"drain_request", Target::kDrain, SimRuntime::MessageLeg::kRequest, 0},
        LostMessage{"drain_reply", Target::kDrain, SimRuntime::MessageLeg::kReply, 0},
        LostMessage{"commit_map_to_source", Target::kCommitMapToSource,
                    SimRuntime::MessageLeg::kRequest, 0},
        LostMessage{"commit_map_to_destination", Target::kCommitMapToDestination,
                    SimRuntime::MessageLeg::kRequest, 0},
        // Within the push's timeout: the destination serves while the source still has the
        // prepare map.
        LostMessage{"commit_map_to_source_late", Target::kCommitMapToSource,
                    SimRuntime::MessageLeg::kRequest, 40 * kMs}),
    [](const ::testing::TestParamInfo<LostMessage>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace shoal::coordinator
