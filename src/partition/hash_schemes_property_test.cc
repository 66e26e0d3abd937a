// Properties shared by the hash placement schemes (modulo, ring, rendezvous per key and per
// bucket, jump, static bucketing): determinism, totality, minimal movement on membership
// changes, and internal consistency after random add/remove sequences.

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "src/common/random.h"
#include "src/partition/jump_scheme.h"
#include "src/partition/scheme.h"

namespace shoal::partition {
namespace {

constexpr uint32_t kNodeIds = 40;  // node ids are drawn from [0, kNodeIds)

// A membership change: add (true) or remove (false) a node; invalid ones are rejected and must
// leave the scheme unchanged.
using Op = std::pair<bool, uint32_t>;

enum class Variant { kModulo, kRing, kRendezvousKey, kRendezvousBucket, kJump, kStatic };

SchemeOptions OptionsFor(Variant variant, uint64_t seed) {
  SchemeOptions options;
  options.hash_seed = seed;
  options.vnodes = 16;
  options.static_buckets = 64;
  switch (variant) {
    case Variant::kModulo:
      options.kind = SchemeKind::kModulo;
      break;
    case Variant::kRing:
      options.kind = SchemeKind::kRing;
      break;
    case Variant::kRendezvousKey:
      options.kind = SchemeKind::kRendezvous;
      break;
    case Variant::kRendezvousBucket:
      options.kind = SchemeKind::kRendezvous;
      options.rendezvous_buckets = 64;
      break;
    case Variant::kJump:
      options.kind = SchemeKind::kJump;
      break;
    case Variant::kStatic:
      options.kind = SchemeKind::kStatic;
      break;
  }
  return options;
}

std::vector<NodeId> GenInitialNodes() {
  const auto ids = *rc::gen::nonEmpty(
      rc::gen::container<std::set<uint32_t>>(rc::gen::inRange<uint32_t>(0, kNodeIds)));
  std::vector<NodeId> nodes;
  for (uint32_t id : ids) nodes.push_back(NodeId(id));
  return nodes;
}

std::vector<Op> GenOps() {
  return *rc::gen::container<std::vector<Op>>(
      rc::gen::pair(rc::gen::arbitrary<bool>(), rc::gen::inRange<uint32_t>(0, kNodeIds)));
}

// Random points (uniform, so every range of the space is hit) plus the ends of the space.
std::vector<Point> GenPoints() {
  Random random(*rc::gen::arbitrary<uint64_t>());
  std::vector<Point> points = {Point(0), Point(1), Point(std::numeric_limits<uint64_t>::max())};
  for (int i = 0; i < 300; ++i) points.push_back(Point(random.Next64()));
  return points;
}

std::unique_ptr<Scheme> Build(const SchemeOptions& options, const std::vector<NodeId>& initial,
                              const std::vector<Op>& ops) {
  auto made = MakeScheme(options, initial);
  RC_ASSERT(made.ok());
  std::unique_ptr<Scheme> scheme = std::move(made).value();
  for (const auto& [add, id] : ops) {
    const std::vector<NodeId> before = scheme->Nodes();
    const Status status = add ? scheme->AddNode(NodeId(id)) : scheme->RemoveNode(NodeId(id));
    if (!status.ok()) RC_ASSERT(scheme->Nodes() == before);
  }
  return scheme;
}

std::vector<NodeId> OwnersOf(const Scheme& scheme, const std::vector<Point>& points) {
  std::vector<NodeId> owners;
  owners.reserve(points.size());
  for (Point p : points) owners.push_back(scheme.OwnerOf({p, {}}));
  return owners;
}

// Same options and the same calls give the same owners, in another instance and in a Clone; the
// order in which the initial nodes are listed does not matter.
void CheckDeterministic(Variant variant) {
  const SchemeOptions options = OptionsFor(variant, *rc::gen::arbitrary<uint64_t>());
  const std::vector<NodeId> initial = GenInitialNodes();
  const std::vector<Op> ops = GenOps();
  const std::vector<Point> points = GenPoints();
  const auto a = Build(options, initial, ops);
  const auto b = Build(options, std::vector<NodeId>(initial.rbegin(), initial.rend()), ops);
  const auto clone = a->Clone();
  const std::vector<NodeId> owners = OwnersOf(*a, points);
  RC_ASSERT(OwnersOf(*b, points) == owners);
  RC_ASSERT(OwnersOf(*clone, points) == owners);
  RC_ASSERT(a->DebugString() == b->DebugString());
  RC_ASSERT(clone->DebugString() == a->DebugString());
}

// Every point has an owner, and it is a member.
void CheckTotal(Variant variant) {
  const SchemeOptions options = OptionsFor(variant, *rc::gen::arbitrary<uint64_t>());
  const auto scheme = Build(options, GenInitialNodes(), GenOps());
  const std::vector<NodeId> nodes = scheme->Nodes();
  for (NodeId owner : OwnersOf(*scheme, GenPoints())) {
    RC_ASSERT(std::binary_search(nodes.begin(), nodes.end(), owner));
  }
}

// Adding a node moves keys only to that node.
void CheckAddMovesOnlyToNewNode(Variant variant) {
  const SchemeOptions options = OptionsFor(variant, *rc::gen::arbitrary<uint64_t>());
  const auto before = Build(options, GenInitialNodes(), GenOps());
  const NodeId added(*rc::gen::inRange<uint32_t>(0, 2 * kNodeIds));
  const std::vector<NodeId> nodes = before->Nodes();
  RC_PRE(!std::binary_search(nodes.begin(), nodes.end(), added));
  auto after = before->Clone();
  RC_ASSERT(after->AddNode(added).ok());
  const std::vector<Point> points = GenPoints();
  const std::vector<NodeId> was = OwnersOf(*before, points);
  const std::vector<NodeId> is = OwnersOf(*after, points);
  for (size_t i = 0; i < points.size(); ++i) {
    if (was[i] != is[i]) RC_ASSERT(is[i] == added);
  }
}

// Removing `removed` from `before` moves only the keys it owned.
void CheckRemoveMovesOnlyItsKeys(const Scheme& before, NodeId removed) {
  auto after = before.Clone();
  RC_ASSERT(after->RemoveNode(removed).ok());
  const std::vector<Point> points = GenPoints();
  const std::vector<NodeId> was = OwnersOf(before, points);
  const std::vector<NodeId> is = OwnersOf(*after, points);
  for (size_t i = 0; i < points.size(); ++i) {
    if (was[i] != is[i]) RC_ASSERT(was[i] == removed);
    RC_ASSERT(is[i] != removed);
  }
}

void CheckRemoveMovesOnlyItsKeys(Variant variant) {
  const SchemeOptions options = OptionsFor(variant, *rc::gen::arbitrary<uint64_t>());
  const auto before = Build(options, GenInitialNodes(), GenOps());
  const std::vector<NodeId> nodes = before->Nodes();
  RC_PRE(nodes.size() > 1);
  CheckRemoveMovesOnlyItsKeys(*before, *rc::gen::elementOf(nodes));
}

// CheckInvariants holds after every call of a random add/remove sequence.
void CheckInvariantsHold(Variant variant) {
  const SchemeOptions options = OptionsFor(variant, *rc::gen::arbitrary<uint64_t>());
  auto made = MakeScheme(options, GenInitialNodes());
  RC_ASSERT(made.ok());
  std::unique_ptr<Scheme> scheme = std::move(made).value();
  RC_ASSERT(scheme->CheckInvariants().ok());
  for (const auto& [add, id] : GenOps()) {
    const Status status = add ? scheme->AddNode(NodeId(id)) : scheme->RemoveNode(NodeId(id));
    RC_ASSERT(status.ok() || status.code() == StatusCode::kAlreadyExists ||
              status.code() == StatusCode::kNotFound ||
              status.code() == StatusCode::kFailedPrecondition);
    RC_ASSERT(scheme->CheckInvariants().ok());
  }
  // Partitions, where the scheme has them, tile the space in point order.
  const std::vector<PartitionInfo> parts = scheme->Partitions();
  for (size_t i = 0; i < parts.size(); ++i) {
    RC_ASSERT(parts[i].begin_point == (i == 0 ? 0 : parts[i - 1].end_point));
    RC_ASSERT(parts[i].end_is_max == (i + 1 == parts.size()));
    RC_ASSERT(scheme->OwnerOf({Point(parts[i].begin_point), {}}) == parts[i].owner);
  }
}

RC_GTEST_PROP(HashSchemesProperty, ModuloIsDeterministic, ()) {
  CheckDeterministic(Variant::kModulo);
}
RC_GTEST_PROP(HashSchemesProperty, RingIsDeterministic, ()) { CheckDeterministic(Variant::kRing); }
RC_GTEST_PROP(HashSchemesProperty, RendezvousKeyIsDeterministic, ()) {
  CheckDeterministic(Variant::kRendezvousKey);
}
RC_GTEST_PROP(HashSchemesProperty, RendezvousBucketIsDeterministic, ()) {
  CheckDeterministic(Variant::kRendezvousBucket);
}
RC_GTEST_PROP(HashSchemesProperty, JumpIsDeterministic, ()) { CheckDeterministic(Variant::kJump); }
RC_GTEST_PROP(HashSchemesProperty, StaticIsDeterministic, ()) {
  CheckDeterministic(Variant::kStatic);
}

RC_GTEST_PROP(HashSchemesProperty, ModuloIsTotal, ()) { CheckTotal(Variant::kModulo); }
RC_GTEST_PROP(HashSchemesProperty, RingIsTotal, ()) { CheckTotal(Variant::kRing); }
RC_GTEST_PROP(HashSchemesProperty, RendezvousKeyIsTotal, ()) {
  CheckTotal(Variant::kRendezvousKey);
}
RC_GTEST_PROP(HashSchemesProperty, RendezvousBucketIsTotal, ()) {
  CheckTotal(Variant::kRendezvousBucket);
}
RC_GTEST_PROP(HashSchemesProperty, JumpIsTotal, ()) { CheckTotal(Variant::kJump); }
RC_GTEST_PROP(HashSchemesProperty, StaticIsTotal, ()) { CheckTotal(Variant::kStatic); }

RC_GTEST_PROP(HashSchemesProperty, RingAddMovesKeysOnlyToNewNode, ()) {
  CheckAddMovesOnlyToNewNode(Variant::kRing);
}
RC_GTEST_PROP(HashSchemesProperty, RendezvousKeyAddMovesKeysOnlyToNewNode, ()) {
  CheckAddMovesOnlyToNewNode(Variant::kRendezvousKey);
}
RC_GTEST_PROP(HashSchemesProperty, RendezvousBucketAddMovesKeysOnlyToNewNode, ()) {
  CheckAddMovesOnlyToNewNode(Variant::kRendezvousBucket);
}
RC_GTEST_PROP(HashSchemesProperty, JumpAddMovesKeysOnlyToNewNode, ()) {
  CheckAddMovesOnlyToNewNode(Variant::kJump);
}
RC_GTEST_PROP(HashSchemesProperty, StaticAddMovesKeysOnlyToNewNode, ()) {
  CheckAddMovesOnlyToNewNode(Variant::kStatic);
}

RC_GTEST_PROP(HashSchemesProperty, RingRemoveMovesOnlyItsKeys, ()) {
  CheckRemoveMovesOnlyItsKeys(Variant::kRing);
}
RC_GTEST_PROP(HashSchemesProperty, RendezvousKeyRemoveMovesOnlyItsKeys, ()) {
  CheckRemoveMovesOnlyItsKeys(Variant::kRendezvousKey);
}
RC_GTEST_PROP(HashSchemesProperty, RendezvousBucketRemoveMovesOnlyItsKeys, ()) {
  CheckRemoveMovesOnlyItsKeys(Variant::kRendezvousBucket);
}
RC_GTEST_PROP(HashSchemesProperty, StaticRemoveMovesOnlyItsKeys, ()) {
  CheckRemoveMovesOnlyItsKeys(Variant::kStatic);
}

// Jump keeps movement minimal only when the node in the last slot leaves.
RC_GTEST_PROP(HashSchemesProperty, JumpRemoveOfLastSlotMovesOnlyItsKeys, ()) {
  const SchemeOptions options = OptionsFor(Variant::kJump, 0);
  const auto before = Build(options, GenInitialNodes(), GenOps());
  RC_PRE(before->Nodes().size() > 1);
  CheckRemoveMovesOnlyItsKeys(*before, static_cast<const JumpScheme&>(*before).slots().back());
}

// Removing another node moves its keys to the last slot's node, whose keys scatter.
RC_GTEST_PROP(HashSchemesProperty, JumpRemoveOfOtherSlotMovesOnlyTwoNodesKeys, ()) {
  const SchemeOptions options = OptionsFor(Variant::kJump, 0);
  const auto before = Build(options, GenInitialNodes(), GenOps());
  const std::vector<NodeId> slots = static_cast<const JumpScheme&>(*before).slots();
  RC_PRE(slots.size() > 1);
  const NodeId removed = slots[*rc::gen::inRange<size_t>(0, slots.size() - 1)];
  const NodeId last = slots.back();
  auto after = before->Clone();
  RC_ASSERT(after->RemoveNode(removed).ok());
  const std::vector<Point> points = GenPoints();
  const std::vector<NodeId> was = OwnersOf(*before, points);
  const std::vector<NodeId> is = OwnersOf(*after, points);
  for (size_t i = 0; i < points.size(); ++i) {
    if (was[i] == removed) RC_ASSERT(is[i] == last);
    if (was[i] != is[i]) RC_ASSERT(was[i] == removed || was[i] == last);
  }
}

RC_GTEST_PROP(HashSchemesProperty, ModuloInvariantsHold, ()) {
  CheckInvariantsHold(Variant::kModulo);
}
RC_GTEST_PROP(HashSchemesProperty, RingInvariantsHold, ()) { CheckInvariantsHold(Variant::kRing); }
RC_GTEST_PROP(HashSchemesProperty, RendezvousKeyInvariantsHold, ()) {
  CheckInvariantsHold(Variant::kRendezvousKey);
}
RC_GTEST_PROP(HashSchemesProperty, RendezvousBucketInvariantsHold, ()) {
  CheckInvariantsHold(Variant::kRendezvousBucket);
}
RC_GTEST_PROP(HashSchemesProperty, JumpInvariantsHold, ()) { CheckInvariantsHold(Variant::kJump); }
RC_GTEST_PROP(HashSchemesProperty, StaticInvariantsHold, ()) {
  CheckInvariantsHold(Variant::kStatic);
}

}  // namespace
}  // namespace shoal::partition
