// The state machine of paper 000 §4 (Table 1) and its metadata encoding.

#include "src/clientside/sharding_state.h"

#include <gtest/gtest.h>

#include "src/clientside/test_support.h"

namespace shoal::clientside {
namespace {

TEST(ShardingStateTest, FullCycleAndTableOne) {
  ShardingState s{
      .state = ClientState::kNormal, .version = MapVersion(1), .old_shards = 2, .shards = 2};
  ASSERT_TRUE(s.CheckInvariants().ok());
  EXPECT_FALSE(s.Next().ok());
  auto entered = s.BeginChange(3);
  ASSERT_TRUE(entered.ok());
  s = *entered;
  std::vector<ClientState> seen = {s.state};
  while (s.state != ClientState::kNormal) {
    ASSERT_TRUE(s.CheckInvariants().ok()) << s.DebugString();
    EXPECT_EQ(s.old_version(), MapVersion(1));
    EXPECT_EQ(s.span(), 3u);
    auto decoded = ShardingState::Decode(s.Encode());
    ASSERT_TRUE(decoded.ok());
    EXPECT_EQ(*decoded, s);
    EXPECT_EQ(decoded->Encode(), s.Encode());
    s = *s.Next();
    seen.push_back(s.state);
  }
  EXPECT_EQ(seen, (std::vector<ClientState>{ClientState::kEnterRebalance, ClientState::kRebalancing,
                                            ClientState::kEnterCleanup, ClientState::kCleanup,
                                            ClientState::kLeaveRebalance, ClientState::kNormal}));
  EXPECT_EQ(s.version, MapVersion(2));
  EXPECT_EQ(s.old_shards, 3u);
  EXPECT_EQ(AlgorithmFor(ClientState::kNormal), ClientAlgorithm::kNaive);
  EXPECT_EQ(AlgorithmFor(ClientState::kRebalancing), ClientAlgorithm::kConsistent);
  for (ClientState c : {ClientState::kEnterRebalance, ClientState::kEnterCleanup,
                        ClientState::kCleanup, ClientState::kLeaveRebalance}) {
    EXPECT_EQ(AlgorithmFor(c), ClientAlgorithm::kNone) << ClientStateName(c);
  }
  // Shrinking works the same way, with the version, not the shard count, as the document version.
  auto shrink = s.BeginChange(2);
  ASSERT_TRUE(shrink.ok());
  EXPECT_EQ(shrink->version, MapVersion(3));
  EXPECT_EQ(shrink->old_version(), MapVersion(2));
  EXPECT_FALSE(s.BeginChange(3).ok());
  EXPECT_FALSE(s.BeginChange(0).ok());
  EXPECT_FALSE(ShardingState::Decode("normal 1 2 3").ok());
  EXPECT_FALSE(ShardingState::Decode("sideways 1 2 2").ok());
}

TEST(ShardingStateTest, BarrierCompletesWhenEveryLiveMemberJoined) {
  testing::ScopedTempDir dir;
  auto store = testing::OpenMetadata(dir.path());
  ASSERT_TRUE(InitShardingState(*store, "c", 2).ok());
  const StateKeys keys("c");
  auto a = store->OpenSession(std::chrono::seconds(30));
  auto b = store->OpenSession(std::chrono::seconds(30));
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(store->PutEphemeral(*a, keys.member("a"), "", metadata::kMustNotExist).ok());
  ASSERT_TRUE(store->PutEphemeral(*b, keys.member("b"), "", metadata::kMustNotExist).ok());
  ASSERT_TRUE(BeginShardCountChange(*store, "c", 3).ok());
  EXPECT_FALSE(BeginShardCountChange(*store, "c", 4).ok());
  auto s = ReadShardingState(*store, keys);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->state.state, ClientState::kEnterRebalance);
  ASSERT_TRUE(
      store->PutEphemeral(*a, keys.barrier(s->state) + "a", "", metadata::kAnyVersion).ok());
  EXPECT_FALSE(*TryCompleteBarrier(*store, keys));
  // b dies: the barrier no longer waits for it.
  ASSERT_TRUE(store->CloseSession(*b).ok());
  EXPECT_TRUE(*TryCompleteBarrier(*store, keys));
  EXPECT_EQ(ReadShardingState(*store, keys)->state.state, ClientState::kRebalancing);
  // A stale transition is refused by the compare-and-set (and reported as done by others).
  EXPECT_TRUE(CommitNext(*store, keys, *s).ok());
  EXPECT_EQ(ReadShardingState(*store, keys)->state.state, ClientState::kRebalancing);
}

}  // namespace
}  // namespace shoal::clientside
