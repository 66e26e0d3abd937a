// Properties shared by the size-driven schemes (extendible hashing, range): determinism of the
// whole call sequence, Clone equality, totality (every key has exactly one owner, a member of
// Nodes()) and internal consistency after random sequences of inserts, erases, membership
// changes and rebalances.

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "src/common/point.h"
#include "src/common/random.h"
#include "src/partition/scheme.h"

namespace shoal::partition {
namespace {

constexpr uint32_t kNodeIds = 12;  // node ids are drawn from [0, kNodeIds)

enum class OpKind { kInsert, kErase, kAddNode, kRemoveNode, kRebalance };

struct Op {
  OpKind kind;
  uint64_t value;  // key index, or node id
  uint64_t bytes;
};

// A key: its raw bytes (random length, so prefixes and the empty key occur) and its point.
struct TestKey {
  std::string raw;
  Point point;
  KeyRef ref() const { return KeyRef{point, raw}; }
};

std::vector<TestKey> MakeKeys(uint64_t seed, size_t count) {
  Random random(seed);
  std::vector<TestKey> keys;
  std::set<std::string> seen;
  while (keys.size() < count) {
    std::string raw(random.Uniform(4), '\0');
    for (char& c : raw) c = static_cast<char>(random.Uniform(4) * 0x55);  // 00 55 aa ff
    if (!seen.insert(raw).second) {
      raw += static_cast<char>(random.Uniform(256));
      if (!seen.insert(raw).second) continue;
    }
    keys.push_back({raw, PointOf(CollectionId(1), raw)});
  }
  return keys;
}

SchemeOptions GenOptions(SchemeKind kind) {
  SchemeOptions options;
  options.kind = kind;
  options.theta_max_bytes = *rc::gen::inRange<uint64_t>(100, 2000);
  options.theta_min_bytes = *rc::gen::inRange<uint64_t>(0, options.theta_max_bytes / 2 + 1);
  options.min_partitions = *rc::gen::inRange<uint32_t>(1, 5);
  options.initial_depth = *rc::gen::inRange<uint32_t>(0, 4);
  options.max_depth = *rc::gen::inRange<uint32_t>(options.initial_depth, 12);
  return options;
}

std::vector<NodeId> GenInitialNodes() {
  const auto ids = *rc::gen::nonEmpty(
      rc::gen::container<std::set<uint32_t>>(rc::gen::inRange<uint32_t>(0, kNodeIds)));
  std::vector<NodeId> nodes;
  for (uint32_t id : ids) nodes.push_back(NodeId(id));
  return nodes;
}

std::vector<Op> GenOps(size_t key_count) {
  const auto gen_op = rc::gen::apply(
      [key_count](int kind, uint64_t value, uint64_t bytes) {
        // Mostly inserts and erases, so that partitions split and merge.
        OpKind k = kind < 6    ? OpKind::kInsert
                   : kind < 9  ? OpKind::kErase
                   : kind < 10 ? OpKind::kAddNode
                   : kind < 11 ? OpKind::kRemoveNode
                               : OpKind::kRebalance;
        const uint64_t range =
            (k == OpKind::kAddNode || k == OpKind::kRemoveNode) ? kNodeIds : key_count;
        return Op{k, value % range, bytes};
      },
      rc::gen::inRange(0, 12), rc::gen::arbitrary<uint64_t>(), rc::gen::inRange<uint64_t>(1, 300));
  return *rc::gen::container<std::vector<Op>>(gen_op);
}

// Applies `op`; inserts only keys not stored and erases only stored ones (the Scheme contract).
void Apply(Scheme& scheme, const Op& op, const std::vector<TestKey>& keys,
           std::vector<uint64_t>& stored) {
  switch (op.kind) {
    case OpKind::kInsert:
      if (stored[op.value] == 0) {
        scheme.OnInsert(keys[op.value].ref(), op.bytes);
        stored[op.value] = op.bytes;
      }
      break;
    case OpKind::kErase:
      if (stored[op.value] != 0) {
        scheme.OnErase(keys[op.value].ref(), stored[op.value]);
        stored[op.value] = 0;
      }
      break;
    case OpKind::kAddNode:
      scheme.AddNode(NodeId(static_cast<uint32_t>(op.value))).IgnoreError();
      break;
    case OpKind::kRemoveNode:
      scheme.RemoveNode(NodeId(static_cast<uint32_t>(op.value))).IgnoreError();
      break;
    case OpKind::kRebalance:
      scheme.Rebalance();
      break;
  }
}

bool SamePartitions(const std::vector<PartitionInfo>& a, const std::vector<PartitionInfo>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].owner != b[i].owner || a[i].begin_point != b[i].begin_point ||
        a[i].end_point != b[i].end_point || a[i].end_is_max != b[i].end_is_max ||
        a[i].begin_key != b[i].begin_key || a[i].end_key != b[i].end_key ||
        a[i].keys != b[i].keys || a[i].bytes != b[i].bytes) {
      return false;
    }
  }
  return true;
}

// Every key and a few extreme ones have exactly one containing partition, whose owner OwnerOf
// returns, and that owner is a member.
void CheckTotality(const Scheme& scheme, const std::vector<TestKey>& keys) {
  const std::vector<NodeId> nodes = scheme.Nodes();
  const std::vector<PartitionInfo> partitions = scheme.Partitions();
  std::vector<TestKey> probes = keys;
  probes.push_back({"", Point(0)});
  probes.push_back({std::string(3, '\xff'), Point(std::numeric_limits<uint64_t>::max())});
  for (const TestKey& key : probes) {
    const NodeId owner = scheme.OwnerOf(key.ref());
    RC_ASSERT(std::binary_search(nodes.begin(), nodes.end(), owner));
    int containing = 0;
    NodeId by_partition;
    for (const PartitionInfo& p : partitions) {
      const bool contains = scheme.kind() == SchemeKind::kRange
                                ? p.begin_key <= key.raw && (p.end_is_max || key.raw < p.end_key)
                                : p.begin_point <= key.point.value() &&
                                      (p.end_is_max || key.point.value() < p.end_point);
      if (contains) {
        ++containing;
        by_partition = p.owner;
      }
    }
    RC_ASSERT(containing == 1);
    RC_ASSERT(by_partition == owner);
  }
}

void CheckSchemeProperties(SchemeKind kind) {
  const SchemeOptions options = GenOptions(kind);
  const std::vector<NodeId> initial = GenInitialNodes();
  const std::vector<TestKey> keys = MakeKeys(*rc::gen::arbitrary<uint64_t>(), 120);
  const std::vector<Op> ops = GenOps(keys.size());

  auto a = MakeScheme(options, initial);
  auto b = MakeScheme(options, initial);
  RC_ASSERT(a.ok() && b.ok());
  std::vector<uint64_t> stored_a(keys.size(), 0);
  std::vector<uint64_t> stored_b(keys.size(), 0);
  for (size_t i = 0; i < ops.size(); ++i) {
    Apply(**a, ops[i], keys, stored_a);
    Apply(**b, ops[i], keys, stored_b);
    if (i % 16 == 0) RC_ASSERT((*a)->CheckInvariants().ok());
  }
  RC_ASSERT((*a)->CheckInvariants().ok());
  CheckTotality(**a, keys);

  // Same options and calls: same nodes, partitions and owners.
  RC_ASSERT((*a)->Nodes() == (*b)->Nodes());
  RC_ASSERT(SamePartitions((*a)->Partitions(), (*b)->Partitions()));
  RC_ASSERT((*a)->DebugString() == (*b)->DebugString());
  for (const TestKey& key : keys) RC_ASSERT((*a)->OwnerOf(key.ref()) == (*b)->OwnerOf(key.ref()));

  // A clone is equal now and evolves identically.
  auto clone = (*a)->Clone();
  RC_ASSERT(clone->CheckInvariants().ok());
  RC_ASSERT(SamePartitions(clone->Partitions(), (*a)->Partitions()));
  RC_ASSERT(clone->DebugString() == (*a)->DebugString());
  std::vector<uint64_t> stored_clone = stored_a;
  const std::vector<Op> more = GenOps(keys.size());
  for (const Op& op : more) {
    Apply(**a, op, keys, stored_a);
    Apply(*clone, op, keys, stored_clone);
  }
  RC_ASSERT(SamePartitions(clone->Partitions(), (*a)->Partitions()));
  RC_ASSERT(clone->CheckInvariants().ok());
  CheckTotality(*clone, keys);
}

RC_GTEST_PROP(SizedSchemeProperty, ExtendibleIsDeterministicTotalAndConsistent, ()) {
  CheckSchemeProperties(SchemeKind::kExtendible);
}

RC_GTEST_PROP(SizedSchemeProperty, RangeIsDeterministicTotalAndConsistent, ()) {
  CheckSchemeProperties(SchemeKind::kRange);
}

}  // namespace
}  // namespace shoal::partition
