#include "src/partition/range_scheme.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "src/common/point.h"
#include "src/common/random.h"
#include "src/partition/schemes.h"

namespace shoal::partition {
namespace {

std::vector<NodeId> NodeRange(uint32_t first, uint32_t count) {
  std::vector<NodeId> nodes;
  for (uint32_t i = 0; i < count; ++i) nodes.push_back(NodeId(first + i));
  return nodes;
}

SchemeOptions Options(uint64_t theta_max, uint64_t theta_min, uint32_t min_partitions = 1) {
  SchemeOptions options;
  options.kind = SchemeKind::kRange;
  options.theta_max_bytes = theta_max;
  options.theta_min_bytes = theta_min;
  options.min_partitions = min_partitions;
  return options;
}

std::unique_ptr<RangeScheme> Make(const SchemeOptions& options, const std::vector<NodeId>& nodes) {
  auto scheme = RangeScheme::Create(options, nodes);
  EXPECT_TRUE(scheme.ok()) << scheme.status();
  return std::move(scheme).value();
}

// The big-endian encoding of `value`: raw keys whose byte order is numeric order.
std::string Int(uint64_t value) {
  char bytes[8];
  EncodeBigEndian64(value, bytes);
  return std::string(bytes, sizeof(bytes));
}

void Insert(RangeScheme& scheme, const std::string& key, uint64_t bytes) {
  scheme.OnInsert(KeyRef{Point(0), key}, bytes);
}
void Erase(RangeScheme& scheme, const std::string& key, uint64_t bytes) {
  scheme.OnErase(KeyRef{Point(0), key}, bytes);
}

std::vector<std::string> Begins(const RangeScheme& scheme) {
  std::vector<std::string> begins;
  for (const PartitionInfo& p : scheme.Partitions()) begins.push_back(p.begin_key);
  return begins;
}

TEST(RangeSchemeTest, StartsAsOnePartitionOverEverything) {
  auto scheme = Make(Options(1000, 500), NodeRange(3, 3));
  const auto partitions = scheme->Partitions();
  ASSERT_EQ(partitions.size(), 1u);
  EXPECT_EQ(partitions[0].begin_key, "");
  EXPECT_TRUE(partitions[0].end_is_max);
  EXPECT_EQ(partitions[0].owner, NodeId(3));  // Balance: lowest id among equal loads
  EXPECT_EQ(scheme->Owner(""), NodeId(3));
  EXPECT_EQ(scheme->Owner("\xff\xff\xff"), NodeId(3));
  EXPECT_TRUE(scheme->CheckInvariants().ok());
}

TEST(RangeSchemeTest, GrowsToMinPartitionsAsDataArrives) {
  auto scheme = Make(Options(1'000'000, 500'000, /*min_partitions=*/4), NodeRange(1, 2));
  Insert(*scheme, Int(0), 100);
  EXPECT_EQ(scheme->partition_count(), 1u);  // one key cannot be split
  for (uint64_t i = 1; i < 100; ++i) Insert(*scheme, Int(i), 100);
  EXPECT_EQ(scheme->partition_count(), 4u);  // far below theta max, but never fewer than N
  EXPECT_TRUE(scheme->CheckInvariants().ok());
}

TEST(RangeSchemeTest, SplitsAtTheVolumeMedianAndKeepsBothHalvesOnTheNode) {
  auto scheme = Make(Options(1000, 500), NodeRange(1, 2));
  for (uint64_t i = 0; i < 10; ++i) Insert(*scheme, Int(i), 100);
  EXPECT_EQ(scheme->partition_count(), 1u);  // 1000 bytes: not above theta max
  Insert(*scheme, Int(10), 100);             // 1100 bytes: split
  const auto partitions = scheme->Partitions();
  ASSERT_EQ(partitions.size(), 2u);
  // Cuts before key 5 (500 | 600) and before key 6 (600 | 500) are as even; the first wins.
  EXPECT_EQ(partitions[1].begin_key, Int(5));
  EXPECT_EQ(partitions[0].end_key, Int(5));
  EXPECT_EQ(partitions[0].bytes, 500u);
  EXPECT_EQ(partitions[0].keys, 5u);
  EXPECT_EQ(partitions[1].bytes, 600u);
  EXPECT_EQ(partitions[1].keys, 6u);
  EXPECT_EQ(partitions[0].owner, partitions[1].owner);
  EXPECT_EQ(scheme->splits(), 1u);
  EXPECT_TRUE(scheme->CheckInvariants().ok());
}

TEST(RangeSchemeTest, SplitFollowsVolumeNotKeyCount) {
  auto scheme = Make(Options(1000, 500), NodeRange(1, 1));
  Insert(*scheme, "a", 100);
  Insert(*scheme, "b", 100);
  Insert(*scheme, "c", 800);
  Insert(*scheme, "d", 100);  // 1100: cuts before b (100|1000), c (200|900), d (1000|100)
  EXPECT_EQ(Begins(*scheme), (std::vector<std::string>{"", "c"}));
  EXPECT_TRUE(scheme->CheckInvariants().ok());
}

TEST(RangeSchemeTest, ASingleOversizedKeyStaysAlone) {
  auto scheme = Make(Options(1000, 500), NodeRange(1, 1));
  Insert(*scheme, "m", 5000);
  EXPECT_EQ(scheme->partition_count(), 1u);
  EXPECT_TRUE(scheme->CheckInvariants().ok());
  Insert(*scheme, "a", 10);
  Insert(*scheme, "z", 10);
  EXPECT_EQ(Begins(*scheme), (std::vector<std::string>{"", "m", "z"}));
  EXPECT_TRUE(scheme->CheckInvariants().ok());
}

TEST(RangeSchemeTest, MergesAdjacentSameNodePartitionsBelowThetaMin) {
  auto scheme = Make(Options(1000, 500), NodeRange(1, 1));
  for (uint64_t i = 0; i <= 10; ++i) Insert(*scheme, Int(i), 100);
  ASSERT_EQ(scheme->partition_count(), 2u);  // 500 | 600
  for (uint64_t i = 0; i < 5; ++i) Erase(*scheme, Int(i), 100);
  Erase(*scheme, Int(10), 100);
  EXPECT_EQ(scheme->partition_count(), 2u);  // 0 + 500: not below 500
  Erase(*scheme, Int(9), 100);               // 0 + 400 < 500: merge
  EXPECT_EQ(scheme->partition_count(), 1u);
  EXPECT_EQ(scheme->merges(), 1u);
  EXPECT_EQ(scheme->Partitions()[0].bytes, 400u);
  EXPECT_TRUE(scheme->CheckInvariants().ok());
}

TEST(RangeSchemeTest, NoMergeAtMinPartitions) {
  auto scheme = Make(Options(1000, 500, /*min_partitions=*/2), NodeRange(1, 1));
  for (uint64_t i = 0; i <= 10; ++i) Insert(*scheme, Int(i), 100);
  ASSERT_EQ(scheme->partition_count(), 2u);
  for (uint64_t i = 0; i <= 10; ++i) Erase(*scheme, Int(i), 100);
  EXPECT_EQ(scheme->partition_count(), 2u);
  EXPECT_EQ(scheme->merges(), 0u);
  EXPECT_TRUE(scheme->CheckInvariants().ok());
}

TEST(RangeSchemeTest, MergeRefusedAcrossNodes) {
  auto scheme = Make(Options(1000, 500), NodeRange(1, 2));
  for (uint64_t i = 0; i <= 10; ++i) Insert(*scheme, Int(i), 100);
  ASSERT_EQ(scheme->partition_count(), 2u);
  scheme->Rebalance();  // 1100 | 0: the smaller half (500) moves to node 2
  const auto partitions = scheme->Partitions();
  ASSERT_NE(partitions[0].owner, partitions[1].owner);
  for (uint64_t i = 0; i <= 10; ++i) Erase(*scheme, Int(i), 100);
  EXPECT_EQ(scheme->partition_count(), 2u);
  EXPECT_EQ(scheme->merges(), 0u);
  EXPECT_TRUE(scheme->CheckInvariants().ok());
}

TEST(RangeSchemeTest, OscillatingAroundThetaMaxSplitsOnce) {
  auto scheme = Make(Options(1000, 500), NodeRange(1, 1));
  for (uint64_t i = 0; i < 10; ++i) Insert(*scheme, Int(i), 100);  // exactly theta max
  for (int round = 0; round < 50; ++round) {
    Insert(*scheme, Int(100), 100);
    Erase(*scheme, Int(100), 100);  // the halves total 1000 >= theta min: no merge back
  }
  EXPECT_EQ(scheme->splits(), 1u);
  EXPECT_EQ(scheme->merges(), 0u);
  EXPECT_TRUE(scheme->CheckInvariants().ok());
}

TEST(RangeSchemeTest, OscillatingAroundThetaMinMergesOnce) {
  auto scheme = Make(Options(1000, 500), NodeRange(1, 1));
  for (uint64_t i = 0; i <= 10; ++i) Insert(*scheme, Int(i), 100);  // 500 | 600
  for (uint64_t i = 0; i < 7; ++i) Erase(*scheme, Int(i), 100);     // 0 | 400: merged
  ASSERT_EQ(scheme->merges(), 1u);
  for (int round = 0; round < 50; ++round) {
    Insert(*scheme, Int(3), 100);  // 500 < theta max: the merged partition does not split
    Erase(*scheme, Int(3), 100);
  }
  EXPECT_EQ(scheme->splits(), 1u);
  EXPECT_EQ(scheme->merges(), 1u);
  EXPECT_TRUE(scheme->CheckInvariants().ok());
}

TEST(RangeSchemeTest, IntegerKeysSortNumerically) {
  auto scheme = Make(Options(2000, 1000), NodeRange(1, 1));
  Random random(1);
  std::set<uint64_t> values;
  while (values.size() < 500) values.insert(random.Uniform(1 << 20));
  for (uint64_t v : values) Insert(*scheme, Int(v), 50);
  ASSERT_TRUE(scheme->CheckInvariants().ok());
  const auto partitions = scheme->Partitions();
  ASSERT_GT(partitions.size(), 5u);
  for (size_t i = 1; i < partitions.size(); ++i) {
    const uint64_t begin = DecodeBigEndian64(partitions[i].begin_key.data());
    const uint64_t end = partitions[i].end_is_max ? uint64_t{1} << 20
                                                  : DecodeBigEndian64(partitions[i].end_key.data());
    const auto count = std::distance(values.lower_bound(begin), values.lower_bound(end));
    EXPECT_EQ(partitions[i].keys, static_cast<uint64_t>(count));
  }
}

TEST(RangeSchemeTest, BalanceSpreadsBytesAndNewNodeTakesUpToTheAverage) {
  auto scheme = Make(Options(4000, 2000), NodeRange(1, 3));
  Random random(8);
  for (int i = 0; i < 3000; ++i) Insert(*scheme, Int(random.Next64()), random.Range(50, 150));
  scheme->Rebalance();
  auto loads = [&] {
    std::map<NodeId, uint64_t> load;
    for (NodeId n : scheme->Nodes()) load[n] = 0;
    for (const PartitionInfo& p : scheme->Partitions()) load[p.owner] += p.bytes;
    return load;
  };
  auto spread_ok = [&](const std::map<NodeId, uint64_t>& load) {
    uint64_t hi = 0;
    uint64_t lo = UINT64_MAX;
    for (const auto& [n, l] : load) {
      hi = std::max(hi, l);
      lo = std::min(lo, l);
    }
    return hi - lo <= 4000;  // at most one partition (<= theta max) apart
  };
  EXPECT_TRUE(spread_ok(loads()));
  ASSERT_TRUE(scheme->AddNode(NodeId(4)).ok());
  const auto after = loads();
  EXPECT_TRUE(spread_ok(after));
  EXPECT_LE(after.at(NodeId(4)), scheme->total_bytes() / 4 + 4000);
  EXPECT_GT(after.at(NodeId(4)), 0u);
  ASSERT_TRUE(scheme->RemoveNode(NodeId(2)).ok());
  for (const PartitionInfo& p : scheme->Partitions()) EXPECT_NE(p.owner, NodeId(2));
  EXPECT_TRUE(spread_ok(loads()));
  EXPECT_TRUE(scheme->CheckInvariants().ok());
}

TEST(RangeSchemeTest, ReinsertReplacesTheSizeAndUnknownEraseIsIgnored) {
  auto scheme = Make(Options(1000, 500), NodeRange(1, 1));
  Insert(*scheme, "k", 100);
  Insert(*scheme, "k", 300);
  EXPECT_EQ(scheme->total_keys(), 1u);
  EXPECT_EQ(scheme->total_bytes(), 300u);
  Erase(*scheme, "nope", 100);
  EXPECT_EQ(scheme->total_bytes(), 300u);
  Erase(*scheme, "k", 1);  // the stored size is what leaves
  EXPECT_EQ(scheme->total_bytes(), 0u);
  EXPECT_TRUE(scheme->CheckInvariants().ok());
}

TEST(RangeSchemeTest, AddAndRemoveReportErrors) {
  auto scheme = Make(Options(1000, 500), NodeRange(1, 1));
  EXPECT_EQ(scheme->AddNode(NodeId(1)).code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(scheme->RemoveNode(NodeId(2)).code(), StatusCode::kNotFound);
  EXPECT_EQ(scheme->RemoveNode(NodeId(1)).code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(scheme->AddNode(NodeId(2)).ok());
  EXPECT_EQ(scheme->Nodes(), NodeRange(1, 2));
}

TEST(RangeSchemeTest, ConstructorRejectsBadInputs) {
  EXPECT_EQ(NewRangeScheme(Options(1000, 501), NodeRange(1, 1)).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(NewRangeScheme(Options(1000, 500), {}).status().code(), StatusCode::kInvalidArgument);
  auto scheme = NewRangeScheme(Options(1000, 500), NodeRange(1, 2));
  ASSERT_TRUE(scheme.ok());
  EXPECT_EQ((*scheme)->kind(), SchemeKind::kRange);
}

// Hysteresis (paper 001 §3.1, Θmax >= 2Θmin): from any state, erasing and inserting one key of
// at most Θmin bytes over and over splits at most once (only if the first step is an insert),
// never splits after that (so never after a merge), and never merges the halves of that split.
RC_GTEST_PROP(RangeSchemeProperty, OscillationNeverCyclesSplitAndMerge, ()) {
  const uint64_t theta_max = *rc::gen::inRange<uint64_t>(200, 2000);
  const uint64_t theta_min = *rc::gen::inRange<uint64_t>(theta_max / 8, theta_max / 2 + 1);
  const auto nodes = NodeRange(1, *rc::gen::inRange<uint32_t>(1, 4));
  const uint32_t min_partitions = *rc::gen::inRange<uint32_t>(1, 4);
  auto scheme = Make(Options(theta_max, theta_min, min_partitions), nodes);
  Random random(*rc::gen::arbitrary<uint64_t>());

  // Grow, then (usually) shrink by a random fraction, so that splits and merges have happened.
  std::map<std::string, uint64_t> stored;
  const int fill = *rc::gen::inRange<int>(0, 300);
  for (int i = 0; i < fill; ++i) {
    const std::string key = Int(random.Uniform(1000));
    if (stored.count(key) != 0) continue;
    stored[key] = random.Range(1, theta_min);
    Insert(*scheme, key, stored[key]);
    if (random.OneIn(50)) scheme->Rebalance();
  }
  const uint64_t erase_one_in = *rc::gen::inRange<uint64_t>(0, 5);  // 0: erase nothing
  for (auto it = stored.begin(); it != stored.end();) {
    if (erase_one_in != 0 && random.OneIn(erase_one_in)) {
      Erase(*scheme, it->first, it->second);
      it = stored.erase(it);
    } else {
      ++it;
    }
  }
  if (random.OneIn(2)) scheme->Rebalance();  // may make small neighbours share a node
  RC_ASSERT(scheme->CheckInvariants().ok());

  // The oscillating key: 0 = a new key anywhere; 1 = a new key in the largest partition, sized
  // to push it over Θmax when a key of <= Θmin can; 2 = a stored key of the smallest non-empty
  // partition.
  const int mode = *rc::gen::inRange(0, 3);
  const std::vector<PartitionInfo> partitions = scheme->Partitions();
  PartitionInfo target = partitions.front();
  for (const PartitionInfo& p : partitions) {
    if (mode == 1 ? p.bytes >= target.bytes
                  : (p.keys > 0 && (target.keys == 0 || p.bytes < target.bytes))) {
      target = p;
    }
  }
  const uint64_t lo = target.begin_key.empty() ? 0 : DecodeBigEndian64(target.begin_key.data());
  const uint64_t hi = target.end_is_max ? 1000 : DecodeBigEndian64(target.end_key.data());
  std::string key;
  uint64_t size = random.Range(1, theta_min);
  if (mode == 2) {
    auto it = stored.lower_bound(target.begin_key);
    // (Computed first: RC_PRE's expression capture would not short-circuit.)
    const bool found = it != stored.end() && (target.end_is_max || it->first < target.end_key);
    RC_PRE(found);
    key = it->first;
    size = it->second;
  } else {
    if (mode == 1 && theta_max - target.bytes + 1 <= theta_min) {
      size = random.Range(theta_max - target.bytes + 1, theta_min);
    }
    const uint64_t from = mode == 0 ? 0 : lo;
    const uint64_t to = mode == 0 ? 1000 : hi;
    key = Int(from + random.Uniform(to - from));
    for (int tries = 0; stored.count(key) != 0 && tries < 100; ++tries) {
      key = Int(from + random.Uniform(to - from));
    }
    RC_PRE(stored.count(key) == 0);
  }
  const bool present = mode == 2;

  const uint64_t splits_before = scheme->splits();
  const uint64_t merges_before = scheme->merges();
  const std::vector<std::string> begins_before = Begins(*scheme);
  if (present) {
    Erase(*scheme, key, size);
  } else {
    Insert(*scheme, key, size);
  }
  const uint64_t first_splits = scheme->splits() - splits_before;
  RC_ASSERT(first_splits <= 1);
  RC_ASSERT(!present || first_splits == 0);
  std::vector<std::string> new_bounds;
  for (const std::string& begin : Begins(*scheme)) {
    if (!std::binary_search(begins_before.begin(), begins_before.end(), begin)) {
      new_bounds.push_back(begin);
    }
  }
  for (int step = 0; step < 20; ++step) {
    if (present == (step % 2 == 0)) {
      Insert(*scheme, key, size);
    } else {
      Erase(*scheme, key, size);
    }
    RC_ASSERT(scheme->splits() == splits_before + first_splits);
    const std::vector<std::string> begins = Begins(*scheme);
    for (const std::string& bound : new_bounds) {
      RC_ASSERT(std::binary_search(begins.begin(), begins.end(), bound));
    }
  }
  RC_ASSERT(scheme->CheckInvariants().ok());
  RC_TAG(mode, first_splits, scheme->merges() > merges_before);
}

}  // namespace
}  // namespace shoal::partition
