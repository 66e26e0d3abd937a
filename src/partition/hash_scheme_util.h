#pragma once

// Helpers shared by the hash placement schemes (ring, rendezvous, jump, static bucketing):
// equal buckets over the point space, the 64-bit avalanche finalizer used for HRW weights, and
// the argument checks of the scheme constructors. Pure functions; thread-safe.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/common/ids.h"
#include "src/common/status.h"
#include "src/partition/scheme.h"

namespace shoal::partition::internal {

// The bucket of `point` when [0, 2^64) is cut into `buckets` equal contiguous ranges:
// floor(point * buckets / 2^64). Monotone in `point`, so every bucket is one range. buckets > 0.
[[nodiscard]] inline uint32_t EqualBucketOf(uint64_t point, uint32_t buckets) {
  return static_cast<uint32_t>((static_cast<unsigned __int128>(point) * buckets) >> 64);
}

// The first point of equal bucket `bucket` (< buckets): ceil(bucket * 2^64 / buckets), the least
// point p with EqualBucketOf(p, buckets) == bucket.
[[nodiscard]] inline uint64_t EqualBucketBegin(uint32_t bucket, uint32_t buckets) {
  const unsigned __int128 scaled = static_cast<unsigned __int128>(bucket) << 64;
  return static_cast<uint64_t>((scaled + buckets - 1) / buckets);
}

// Equal bucket `bucket` as a half-open PartitionInfo owned by `owner`; the last bucket has
// end_is_max set and end_point 0.
[[nodiscard]] PartitionInfo EqualBucketPartition(uint32_t bucket, uint32_t buckets, NodeId owner);

// A strong 64-bit avalanche finalizer: the SplitMix64 output function (Stafford's "Mix13"
// constants). A bijection on 64 bits whose every input bit flips every output bit with
// probability close to 1/2; chosen over murmur3's fmix64 because its constants were selected
// for a lower avalanche bias, at the same cost (two multiplies, three shift-xors).
[[nodiscard]] inline uint64_t Avalanche64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// InvalidArgument unless `nodes` is non-empty and its ids are distinct; `scheme` names the
// caller in the message.
[[nodiscard]] Status CheckInitialNodes(std::string_view scheme, std::span<const NodeId> nodes);

// `nodes` sorted by id.
[[nodiscard]] std::vector<NodeId> SortedNodes(std::span<const NodeId> nodes);

// InternalError unless `nodes` is non-empty, sorted and distinct.
[[nodiscard]] Status CheckSortedMembers(std::string_view scheme, std::span<const NodeId> nodes);

// True if `node` is in the sorted `nodes`.
[[nodiscard]] bool IsMember(std::span<const NodeId> nodes, NodeId node);

// "1,2,3": the ids of `nodes`, for DebugString().
[[nodiscard]] std::string JoinNodeIds(std::span<const NodeId> nodes);

}  // namespace shoal::partition::internal
