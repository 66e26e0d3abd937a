#include "src/coordinator/flap_damper.h"

#include <gtest/gtest.h>

#include <vector>

namespace shoal::coordinator {
namespace {

constexpr transport::Micros kSecond = 1'000'000;
const NodeId kNode{7};
const NodeId kOther{8};

class FlapDamperTest : public ::testing::Test {
 protected:
  void TearDown() override { EXPECT_TRUE(damper_.CheckInvariants().ok()); }

  // `node` loses its 8 copies at `at` (one removal per bucket), then gets them back.
  bool Flap(NodeId node, transport::Micros at) {
    bool damped = false;
    for (size_t left = 8; left-- > 0;) {
      damped |= damper_.NoteRemoval(node, at);
      damper_.NoteCopies(node, left);
    }
    damper_.NoteCopies(node, 8);
    return damped;
  }

  FlapDamper damper_;
};

TEST_F(FlapDamperTest, ThreeFlapsWithinAMinuteDampUntilThirtyQuietSeconds) {
  damper_.NoteCopies(kNode, 8);
  EXPECT_FALSE(Flap(kNode, 0));
  EXPECT_FALSE(Flap(kNode, 2 * kSecond));
  EXPECT_TRUE(damper_.Damped(3 * kSecond).empty());
  EXPECT_TRUE(Flap(kNode, 4 * kSecond));
  EXPECT_EQ(damper_.Damped(4 * kSecond), std::vector<NodeId>{kNode});
  EXPECT_EQ(damper_.Damped(34 * kSecond - 1), std::vector<NodeId>{kNode});
  EXPECT_TRUE(damper_.Damped(34 * kSecond).empty());
}

TEST_F(FlapDamperTest, RemovalsWithNoCopyGainedBetweenThemAreOneRemoval) {
  // One long outage: the node leaves its buckets over many rounds and gets nothing back.
  damper_.NoteCopies(kNode, 32);
  for (int bucket = 0; bucket < 32; ++bucket) {
    EXPECT_FALSE(damper_.NoteRemoval(kNode, bucket * kSecond));
    damper_.NoteCopies(kNode, 31 - bucket);
  }
  EXPECT_TRUE(damper_.Damped(32 * kSecond).empty());
}

TEST_F(FlapDamperTest, FlapsFurtherApartThanTheWindowNeverDamp) {
  for (int i = 0; i < 10; ++i) EXPECT_FALSE(Flap(kNode, i * 31 * kSecond));
  EXPECT_TRUE(damper_.Damped(10 * 31 * kSecond).empty());
}

TEST_F(FlapDamperTest, ARemovalWhileDampedExtendsItAndReportsOnce) {
  for (int i = 0; i < 3; ++i) (void)Flap(kNode, i * 10 * kSecond);
  EXPECT_FALSE(Flap(kNode, 45 * kSecond));  // damped already
  EXPECT_EQ(damper_.Damped(74 * kSecond), std::vector<NodeId>{kNode});
  EXPECT_TRUE(damper_.Damped(75 * kSecond).empty());
}

TEST_F(FlapDamperTest, NodesAreDampedApart) {
  for (int i = 0; i < 3; ++i) (void)Flap(kNode, i * 10 * kSecond);
  (void)Flap(kOther, 20 * kSecond);
  EXPECT_EQ(damper_.Damped(25 * kSecond), std::vector<NodeId>{kNode});
}

}  // namespace
}  // namespace shoal::coordinator
