#pragma once

// The identifiers of Shoal's domain, each its own type (see strong_id.h).

#include <cstdint>

#include "src/common/strong_id.h"

namespace shoal {

struct NodeIdTag {
  static constexpr const char* kPrefix = "n";
};
struct BucketIdTag {
  static constexpr const char* kPrefix = "b";
};
struct MapEpochTag {
  static constexpr const char* kPrefix = "e";
};
struct MoveIdTag {
  static constexpr const char* kPrefix = "m";
};
struct CollectionIdTag {
  static constexpr const char* kPrefix = "c";
};
struct TermTag {
  static constexpr const char* kPrefix = "t";
};

// A storage node of the cluster.
using NodeId = StrongId<NodeIdTag, uint32_t>;
// A bucket: one contiguous range of the hash space.
using BucketId = StrongId<BucketIdTag, uint32_t>;
// Version of the ShardMap; strictly increasing with every applied edit.
using MapEpoch = StrongId<MapEpochTag, uint64_t>;
// One attempt to move one bucket; messages of other attempts are ignored.
using MoveId = StrongId<MoveIdTag, uint64_t>;
// A collection of documents.
using CollectionId = StrongId<CollectionIdTag, uint32_t>;
// The reign of one primary of one bucket: the map epoch at which that primary was appointed
// (docs/design/replication.md §2). It only grows along a bucket's lineage.
using Term = StrongId<TermTag, uint64_t>;

}  // namespace shoal
