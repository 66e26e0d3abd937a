#include "tools/shoal/local_existing.h"

#include <gtest/gtest.h>

namespace shoal::tools {
namespace {

cluster::ShardMap ThreeNodes(uint32_t k) {
  auto map = cluster::ShardMap::Initial(
      {.nodes = {NodeId(1), NodeId(2), NodeId(3)}, .bucket_count = 8, .replication_factor = k});
  EXPECT_TRUE(map.ok()) << map.status().ToString();
  return *std::move(map);
}

TEST(LocalExistingTest, ANewClusterIsTheFlagsOwn) {
  const LocalClusterView view = ViewOfLocalCluster(ThreeNodes(3), {.nodes = 3, .replicas = 3});
  EXPECT_EQ(view.replicas, 3u);
  EXPECT_EQ(view.min_in_sync, 2u);
  EXPECT_TRUE(view.not_members.empty());
  EXPECT_TRUE(view.not_started.empty());
  EXPECT_EQ(view.setting_note, "");
}

TEST(LocalExistingTest, SettingsNotGivenAreNotCompared) {
  // `shoal local --nodes 2` defaults to K = 1, but said nothing about K: no note.
  const LocalClusterView view = ViewOfLocalCluster(ThreeNodes(3), {.nodes = 2});
  EXPECT_EQ(view.setting_note, "");
  EXPECT_EQ(view.replicas, 3u);
}

TEST(LocalExistingTest, AnotherKAskedForIsNamedWithTheCommandThatSetsIt) {
  const LocalClusterView view = ViewOfLocalCluster(ThreeNodes(3), {.nodes = 3, .replicas = 2});
  EXPECT_EQ(view.replicas, 3u);
  EXPECT_NE(view.setting_note.find("keeps K = 3, min_in_sync 2"), std::string::npos)
      << view.setting_note;
  EXPECT_NE(view.setting_note.find("`shoal replicas --set 2`"), std::string::npos)
      << view.setting_note;

  const LocalClusterView floor =
      ViewOfLocalCluster(ThreeNodes(3), {.nodes = 3, .replicas = 3, .min_in_sync = 3});
  EXPECT_NE(floor.setting_note.find("`shoal replicas --set 3 --min-in-sync 3`"), std::string::npos)
      << floor.setting_note;
  const LocalClusterView same =
      ViewOfLocalCluster(ThreeNodes(3), {.nodes = 3, .replicas = 3, .min_in_sync = 2});
  EXPECT_EQ(same.setting_note, "");
}

TEST(LocalExistingTest, NodesBeyondTheMembersAndMembersNotStartedAreNamed) {
  const LocalClusterView more = ViewOfLocalCluster(ThreeNodes(1), {.nodes = 5});
  EXPECT_EQ(more.not_members, (std::vector<NodeId>{NodeId(4), NodeId(5)}));
  EXPECT_TRUE(more.not_started.empty());

  const LocalClusterView fewer = ViewOfLocalCluster(ThreeNodes(1), {.nodes = 1});
  EXPECT_TRUE(fewer.not_members.empty());
  EXPECT_EQ(fewer.not_started, (std::vector<NodeId>{NodeId(2), NodeId(3)}));
}

}  // namespace
}  // namespace shoal::tools
