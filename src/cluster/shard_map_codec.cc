#include "src/cluster/shard_map_codec.h"

#include <fmt/format.h>

#include <utility>
#include <vector>

#include "src/cluster/varint.h"

namespace shoal::cluster {
namespace {

using internal::PutByte;
using internal::PutVarint;
using internal::VarintReader;

// Values of the end-kind byte of a bucket; never renumber (the encoding is durable).
enum class EndKind : uint8_t {
  kFinite = 0,  // the end follows as a varint
  kMax = 1,     // the range ends at 2^64, which no varint of 64 bits can hold
};

// Longest accepted replica list (far above any sane K); bounds allocations on garbage.
constexpr uint64_t kMaxEncodedReplicas = 255;
// Fewest bytes a node (id, state) and a bucket (id, begin, end kind, count, flag) can take; they
// bound the counts read from untrusted input by the bytes that remain.
constexpr uint64_t kMinNodeBytes = 2;
constexpr uint64_t kMinBucketBytes = 5;

void PutNodeList(std::string* out, const std::vector<NodeId>& nodes) {
  PutVarint(out, nodes.size());
  for (NodeId node : nodes) PutVarint(out, node.value());
}

Status ReadNodeList(VarintReader& in, std::string_view what, std::vector<NodeId>* nodes) {
  uint64_t count = 0;
  SHOAL_RETURN_IF_ERROR(in.Varint64(fmt::format("{} count", what), &count));
  if (count > kMaxEncodedReplicas || count > in.remaining()) {
    return in.Error(fmt::format("{} count {} is impossible", what, count));
  }
  nodes->resize(count);
  for (NodeId& node : *nodes) SHOAL_RETURN_IF_ERROR(in.Read(what, &node));
  return OkStatus();
}

Status ReadEnum(VarintReader& in, std::string_view what, uint8_t max, uint8_t* value) {
  SHOAL_RETURN_IF_ERROR(in.Byte(what, value));
  if (*value > max) return in.Error(fmt::format("unknown {} {}", what, *value));
  return OkStatus();
}

Status ReadTransition(VarintReader& in, BucketTransition* t) {
  SHOAL_RETURN_IF_ERROR(in.Read("move", &t->move));
  SHOAL_RETURN_IF_ERROR(ReadNodeList(in, "source", &t->source));
  SHOAL_RETURN_IF_ERROR(ReadNodeList(in, "destination", &t->destination));
  uint8_t raw = 0;
  SHOAL_RETURN_IF_ERROR(
      ReadEnum(in, "stage", static_cast<uint8_t>(TransitionStage::kAborted), &raw));
  t->stage = static_cast<TransitionStage>(raw);
  SHOAL_RETURN_IF_ERROR(
      ReadEnum(in, "mode", static_cast<uint8_t>(TransitionMode::kSwitchThenCopy), &raw));
  t->mode = static_cast<TransitionMode>(raw);
  return OkStatus();
}

Status ReadBucket(VarintReader& in, uint8_t version, BucketPlacement* bucket) {
  SHOAL_RETURN_IF_ERROR(in.Read("bucket id", &bucket->id));
  uint64_t begin = 0;
  SHOAL_RETURN_IF_ERROR(in.Varint64("bucket begin", &begin));
  uint8_t kind = 0;
  SHOAL_RETURN_IF_ERROR(
      ReadEnum(in, "bucket end kind", static_cast<uint8_t>(EndKind::kMax), &kind));
  if (static_cast<EndKind>(kind) == EndKind::kMax) {
    bucket->range = BucketRange::ToMax(begin);
  } else {
    uint64_t end = 0;
    SHOAL_RETURN_IF_ERROR(in.Varint64("bucket end", &end));
    StatusOr<BucketRange> range = BucketRange::Make(begin, end);
    if (!range.ok()) return in.Error(MessageOf(range.status()));
    bucket->range = *range;
  }
  SHOAL_RETURN_IF_ERROR(ReadNodeList(in, "replica", &bucket->replicas));
  if (version >= 2) SHOAL_RETURN_IF_ERROR(in.Read("term", &bucket->term));
  uint8_t has_transition = 0;
  SHOAL_RETURN_IF_ERROR(ReadEnum(in, "transition flag", 1, &has_transition));
  if (has_transition == 1) {
    BucketTransition t;
    SHOAL_RETURN_IF_ERROR(ReadTransition(in, &t));
    bucket->transition = std::move(t);
  }
  return OkStatus();
}

}  // namespace

std::string EncodeShardMap(const ShardMap& map) {
  std::string out;
  PutByte(&out, kShardMapFormatVersion);
  PutVarint(&out, map.epoch().value());
  PutVarint(&out, map.replication_factor());
  PutVarint(&out, map.min_in_sync());
  PutVarint(&out, map.nodes().size());
  for (const NodeInfo& node : map.nodes()) {
    PutVarint(&out, node.id.value());
    PutByte(&out, static_cast<uint8_t>(node.state));
    PutVarint(&out, node.store_id);
  }
  PutVarint(&out, map.buckets().size());
  for (const BucketPlacement& bucket : map.buckets()) {
    PutVarint(&out, bucket.id.value());
    PutVarint(&out, bucket.range.begin());
    if (bucket.range.end_is_max()) {
      PutByte(&out, static_cast<uint8_t>(EndKind::kMax));
    } else {
      PutByte(&out, static_cast<uint8_t>(EndKind::kFinite));
      PutVarint(&out, bucket.range.end());
    }
    PutNodeList(&out, bucket.replicas);
    PutVarint(&out, bucket.term.value());
    PutByte(&out, bucket.transition.has_value() ? 1 : 0);
    if (bucket.transition.has_value()) {
      const BucketTransition& t = *bucket.transition;
      PutVarint(&out, t.move.value());
      PutNodeList(&out, t.source);
      PutNodeList(&out, t.destination);
      PutByte(&out, static_cast<uint8_t>(t.stage));
      PutByte(&out, static_cast<uint8_t>(t.mode));
    }
  }
  return out;
}

StatusOr<ShardMap> DecodeShardMap(std::string_view bytes) {
  VarintReader in(bytes, "shard map");
  uint8_t version = 0;
  SHOAL_RETURN_IF_ERROR(in.Byte("format version", &version));
  if (version < kOldestShardMapFormatVersion || version > kShardMapFormatVersion) {
    return in.Error(fmt::format("unknown format version {}", version));
  }
  MapEpoch epoch;
  SHOAL_RETURN_IF_ERROR(in.Read("epoch", &epoch));
  uint32_t replication_factor = 0;
  SHOAL_RETURN_IF_ERROR(in.Varint32("replication factor", &replication_factor));
  uint32_t min_in_sync = 0;  // format 1: the default for K
  if (version >= 2) {
    SHOAL_RETURN_IF_ERROR(in.Varint32("min_in_sync", &min_in_sync));
    // 0 would mean "the default" to Create: the encoding names the floor itself.
    if (min_in_sync == 0) return in.Error("min_in_sync 0");
  }

  uint64_t node_count = 0;
  SHOAL_RETURN_IF_ERROR(in.Varint64("node count", &node_count));
  if (node_count > in.remaining() / kMinNodeBytes) {
    return in.Error(fmt::format("node count {} exceeds the input", node_count));
  }
  std::vector<NodeInfo> nodes(node_count);
  for (size_t i = 0; i < nodes.size(); ++i) {
    SHOAL_RETURN_IF_ERROR(in.Read("node id", &nodes[i].id));
    uint8_t state = 0;
    SHOAL_RETURN_IF_ERROR(
        ReadEnum(in, "node state", static_cast<uint8_t>(NodeState::kLeaving), &state));
    nodes[i].state = static_cast<NodeState>(state);
    if (version >= 2) SHOAL_RETURN_IF_ERROR(in.Varint64("store id", &nodes[i].store_id));
    // Strict order keeps the encoding canonical (Create would sort silently).
    if (i > 0 && !(nodes[i - 1].id < nodes[i].id)) {
      return in.Error(fmt::format("node {} out of order", nodes[i].id.DebugString()));
    }
  }

  uint64_t bucket_count = 0;
  SHOAL_RETURN_IF_ERROR(in.Varint64("bucket count", &bucket_count));
  if (bucket_count > in.remaining() / kMinBucketBytes) {
    return in.Error(fmt::format("bucket count {} exceeds the input", bucket_count));
  }
  std::vector<BucketPlacement> buckets(bucket_count);
  for (size_t i = 0; i < buckets.size(); ++i) {
    Status status = ReadBucket(in, version, &buckets[i]);
    if (!status.ok()) return Prefixed(status, fmt::format("bucket {}", i));
    if (i > 0 && buckets[i - 1].range.begin() >= buckets[i].range.begin()) {
      return in.Error(fmt::format("bucket {} out of order", buckets[i].id.DebugString()));
    }
  }
  if (in.remaining() != 0) return in.Error(fmt::format("{} trailing bytes", in.remaining()));

  return ShardMap::Create(epoch, replication_factor, std::move(nodes), std::move(buckets),
                          min_in_sync);
}

}  // namespace shoal::cluster
