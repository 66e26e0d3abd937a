#include "src/node/cluster_identity.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace shoal::node {
namespace {

class ClusterIdentityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "shoal-cluster-id-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  std::string dir_;
};

TEST_F(ClusterIdentityTest, TheFirstClusterIsAdoptedDurablyAndNoOtherIsTaken) {
  auto identity = ClusterIdentity::Open(dir_);
  ASSERT_TRUE(identity.ok()) << identity.status();
  EXPECT_EQ(identity->id(), 0u);
  EXPECT_TRUE(identity->Admit(0).ok()) << "a coordinator that names no cluster";
  EXPECT_EQ(identity->id(), 0u);
  ASSERT_TRUE(identity->Admit(0xabc).ok());
  EXPECT_EQ(identity->id(), 0xabcu);
  EXPECT_TRUE(identity->Admit(0xabc).ok());
  EXPECT_TRUE(identity->Admit(0).ok());
  const Status other = identity->Admit(0xdef);
  EXPECT_EQ(other.code(), StatusCode::kFailedPrecondition) << other;
  EXPECT_NE(other.ToString().find("0000000000000abc"), std::string::npos) << other;
  EXPECT_NE(other.ToString().find("0000000000000def"), std::string::npos) << other;

  // Kept across a restart.
  auto reopened = ClusterIdentity::Open(dir_);
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  EXPECT_EQ(reopened->id(), 0xabcu);
  EXPECT_FALSE(reopened->Admit(0xdef).ok());
}

TEST_F(ClusterIdentityTest, AFileThatDoesNotParseIsRefusedNotReplaced) {
  std::ofstream(dir_ + "/cluster-id") << "not hex\n";
  auto identity = ClusterIdentity::Open(dir_);
  ASSERT_FALSE(identity.ok());
  EXPECT_EQ(identity.status().code(), StatusCode::kInvalidArgument) << identity.status();
  std::ofstream(dir_ + "/cluster-id", std::ios::trunc) << "0\n";
  EXPECT_FALSE(ClusterIdentity::Open(dir_).ok()) << "0 is no cluster";
}

}  // namespace
}  // namespace shoal::node
