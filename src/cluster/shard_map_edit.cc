#include "src/cluster/shard_map_edit.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <utility>

#include "src/cluster/varint.h"

namespace shoal::cluster {
namespace {

using internal::PutByte;
using internal::PutVarint;
using internal::VarintReader;

// Operation tags of the encoding; never renumber (the encoding is durable).
enum class Tag : uint8_t {
  kAddNode = 1,
  kRemoveNode = 2,
  kSetNodeState = 3,
  kSplitBucket = 4,
  kMergeBuckets = 5,
  kBeginTransition = 6,
  kAdvanceStage = 7,
  kCommitTransition = 8,
  kFinishTransition = 9,
  kAbortTransition = 10,
  kRemoveReplica = 11,
  kPromoteReplica = 12,
  kForcePrimary = 13,
  kSetReplication = 14,
  kBindStore = 15,
  kResetNode = 16,
  kDropReplica = 17,
};

// Longest accepted destination list in an encoded edit (far above any sane K).
constexpr uint64_t kMaxEncodedReplicas = 255;

Status DecodeStage(uint8_t raw, TransitionStage* stage) {
  if (raw > static_cast<uint8_t>(TransitionStage::kAborted)) {
    return InvalidArgumentError(fmt::format("shard map edit: unknown stage {}", raw));
  }
  *stage = static_cast<TransitionStage>(raw);
  return OkStatus();
}

Status DecodeMode(uint8_t raw, TransitionMode* mode) {
  if (raw > static_cast<uint8_t>(TransitionMode::kSwitchThenCopy)) {
    return InvalidArgumentError(fmt::format("shard map edit: unknown mode {}", raw));
  }
  *mode = static_cast<TransitionMode>(raw);
  return OkStatus();
}

Status DecodeNodeState(uint8_t raw, NodeState* state) {
  if (raw > static_cast<uint8_t>(NodeState::kLeaving)) {
    return InvalidArgumentError(fmt::format("shard map edit: unknown node state {}", raw));
  }
  *state = static_cast<NodeState>(raw);
  return OkStatus();
}

// Encodes and decodes one operation; overloads per alternative of EditOp.
struct OpEncoder {
  std::string* out;
  void operator()(const edit::AddNode& op) const {
    PutByte(out, static_cast<uint8_t>(Tag::kAddNode));
    PutVarint(out, op.node.value());
  }
  void operator()(const edit::RemoveNode& op) const {
    PutByte(out, static_cast<uint8_t>(Tag::kRemoveNode));
    PutVarint(out, op.node.value());
  }
  void operator()(const edit::SetNodeState& op) const {
    PutByte(out, static_cast<uint8_t>(Tag::kSetNodeState));
    PutVarint(out, op.node.value());
    PutByte(out, static_cast<uint8_t>(op.state));
  }
  void operator()(const edit::SplitBucket& op) const {
    PutByte(out, static_cast<uint8_t>(Tag::kSplitBucket));
    PutVarint(out, op.bucket.value());
    PutVarint(out, op.at);
    PutVarint(out, op.upper.value());
  }
  void operator()(const edit::MergeBuckets& op) const {
    PutByte(out, static_cast<uint8_t>(Tag::kMergeBuckets));
    PutVarint(out, op.left.value());
    PutVarint(out, op.right.value());
  }
  void operator()(const edit::BeginTransition& op) const {
    PutByte(out, static_cast<uint8_t>(Tag::kBeginTransition));
    PutVarint(out, op.bucket.value());
    PutVarint(out, op.move.value());
    PutByte(out, static_cast<uint8_t>(op.mode));
    PutVarint(out, op.destination.size());
    for (NodeId node : op.destination) PutVarint(out, node.value());
  }
  void operator()(const edit::AdvanceStage& op) const {
    PutByte(out, static_cast<uint8_t>(Tag::kAdvanceStage));
    PutVarint(out, op.bucket.value());
    PutVarint(out, op.move.value());
    PutByte(out, static_cast<uint8_t>(op.stage));
  }
  void operator()(const edit::CommitTransition& op) const { Move(Tag::kCommitTransition, op); }
  void operator()(const edit::FinishTransition& op) const { Move(Tag::kFinishTransition, op); }
  void operator()(const edit::AbortTransition& op) const { Move(Tag::kAbortTransition, op); }
  void operator()(const edit::RemoveReplica& op) const { Replica(Tag::kRemoveReplica, op); }
  void operator()(const edit::DropReplica& op) const { Replica(Tag::kDropReplica, op); }
  void operator()(const edit::PromoteReplica& op) const { Replica(Tag::kPromoteReplica, op); }
  void operator()(const edit::ForcePrimary& op) const { Replica(Tag::kForcePrimary, op); }
  void operator()(const edit::SetReplication& op) const {
    PutByte(out, static_cast<uint8_t>(Tag::kSetReplication));
    PutVarint(out, op.replication_factor);
    PutVarint(out, op.min_in_sync);
  }
  void operator()(const edit::BindStore& op) const { Store(Tag::kBindStore, op); }
  void operator()(const edit::ResetNode& op) const { Store(Tag::kResetNode, op); }

  template <typename Op>
  void Store(Tag tag, const Op& op) const {
    PutByte(out, static_cast<uint8_t>(tag));
    PutVarint(out, op.node.value());
    PutVarint(out, op.store_id);
  }

  template <typename Op>
  void Replica(Tag tag, const Op& op) const {
    PutByte(out, static_cast<uint8_t>(tag));
    PutVarint(out, op.bucket.value());
    PutVarint(out, op.node.value());
  }

  template <typename Op>
  void Move(Tag tag, const Op& op) const {
    PutByte(out, static_cast<uint8_t>(tag));
    PutVarint(out, op.bucket.value());
    PutVarint(out, op.move.value());
  }
};

template <typename Op>
Status DecodeMoveOp(VarintReader& in, Op* op) {
  SHOAL_RETURN_IF_ERROR(in.Read("bucket", &op->bucket));
  return in.Read("move", &op->move);
}

template <typename Op>
Status DecodeReplicaOp(VarintReader& in, Op* op) {
  SHOAL_RETURN_IF_ERROR(in.Read("bucket", &op->bucket));
  return in.Read("node", &op->node);
}

template <typename Op>
Status DecodeStoreOp(VarintReader& in, Op* op) {
  SHOAL_RETURN_IF_ERROR(in.Read("node", &op->node));
  return in.Varint64("store id", &op->store_id);
}

Status DecodeCount(VarintReader& in, const char* what, uint32_t* out) {
  uint64_t value = 0;
  SHOAL_RETURN_IF_ERROR(in.Varint64(what, &value));
  if (value > kMaxEncodedReplicas) {
    return InvalidArgumentError(fmt::format("shard map edit: {} {} is impossible", what, value));
  }
  *out = static_cast<uint32_t>(value);
  return OkStatus();
}

StatusOr<EditOp> DecodeOp(VarintReader& in) {
  uint8_t raw_tag = 0;
  SHOAL_RETURN_IF_ERROR(in.Byte("operation tag", &raw_tag));
  if (raw_tag < static_cast<uint8_t>(Tag::kAddNode) ||
      raw_tag > static_cast<uint8_t>(Tag::kDropReplica)) {
    return InvalidArgumentError(fmt::format("shard map edit: unknown operation tag {}", raw_tag));
  }
  uint8_t byte = 0;
  switch (static_cast<Tag>(raw_tag)) {
    case Tag::kAddNode: {
      edit::AddNode op;
      SHOAL_RETURN_IF_ERROR(in.Read("node", &op.node));
      return EditOp(op);
    }
    case Tag::kRemoveNode: {
      edit::RemoveNode op;
      SHOAL_RETURN_IF_ERROR(in.Read("node", &op.node));
      return EditOp(op);
    }
    case Tag::kSetNodeState: {
      edit::SetNodeState op;
      SHOAL_RETURN_IF_ERROR(in.Read("node", &op.node));
      SHOAL_RETURN_IF_ERROR(in.Byte("node state", &byte));
      SHOAL_RETURN_IF_ERROR(DecodeNodeState(byte, &op.state));
      return EditOp(op);
    }
    case Tag::kSplitBucket: {
      edit::SplitBucket op;
      SHOAL_RETURN_IF_ERROR(in.Read("bucket", &op.bucket));
      SHOAL_RETURN_IF_ERROR(in.Varint64("split point", &op.at));
      SHOAL_RETURN_IF_ERROR(in.Read("upper bucket", &op.upper));
      return EditOp(op);
    }
    case Tag::kMergeBuckets: {
      edit::MergeBuckets op;
      SHOAL_RETURN_IF_ERROR(in.Read("left bucket", &op.left));
      SHOAL_RETURN_IF_ERROR(in.Read("right bucket", &op.right));
      return EditOp(op);
    }
    case Tag::kBeginTransition: {
      edit::BeginTransition op;
      SHOAL_RETURN_IF_ERROR(DecodeMoveOp(in, &op));
      SHOAL_RETURN_IF_ERROR(in.Byte("mode", &byte));
      SHOAL_RETURN_IF_ERROR(DecodeMode(byte, &op.mode));
      uint64_t count = 0;
      SHOAL_RETURN_IF_ERROR(in.Varint64("destination count", &count));
      if (count > kMaxEncodedReplicas || count > in.remaining()) {
        return InvalidArgumentError(
            fmt::format("shard map edit: destination count {} is impossible", count));
      }
      op.destination.resize(count);
      for (NodeId& node : op.destination) SHOAL_RETURN_IF_ERROR(in.Read("destination", &node));
      return EditOp(std::move(op));
    }
    case Tag::kAdvanceStage: {
      edit::AdvanceStage op;
      SHOAL_RETURN_IF_ERROR(DecodeMoveOp(in, &op));
      SHOAL_RETURN_IF_ERROR(in.Byte("stage", &byte));
      SHOAL_RETURN_IF_ERROR(DecodeStage(byte, &op.stage));
      return EditOp(op);
    }
    case Tag::kCommitTransition: {
      edit::CommitTransition op;
      SHOAL_RETURN_IF_ERROR(DecodeMoveOp(in, &op));
      return EditOp(op);
    }
    case Tag::kFinishTransition: {
      edit::FinishTransition op;
      SHOAL_RETURN_IF_ERROR(DecodeMoveOp(in, &op));
      return EditOp(op);
    }
    case Tag::kAbortTransition: {
      edit::AbortTransition op;
      SHOAL_RETURN_IF_ERROR(DecodeMoveOp(in, &op));
      return EditOp(op);
    }
    case Tag::kRemoveReplica: {
      edit::RemoveReplica op;
      SHOAL_RETURN_IF_ERROR(DecodeReplicaOp(in, &op));
      return EditOp(op);
    }
    case Tag::kDropReplica: {
      edit::DropReplica op;
      SHOAL_RETURN_IF_ERROR(DecodeReplicaOp(in, &op));
      return EditOp(op);
    }
    case Tag::kPromoteReplica: {
      edit::PromoteReplica op;
      SHOAL_RETURN_IF_ERROR(DecodeReplicaOp(in, &op));
      return EditOp(op);
    }
    case Tag::kForcePrimary: {
      edit::ForcePrimary op;
      SHOAL_RETURN_IF_ERROR(DecodeReplicaOp(in, &op));
      return EditOp(op);
    }
    case Tag::kSetReplication: {
      edit::SetReplication op;
      SHOAL_RETURN_IF_ERROR(DecodeCount(in, "replication factor", &op.replication_factor));
      SHOAL_RETURN_IF_ERROR(DecodeCount(in, "min_in_sync", &op.min_in_sync));
      return EditOp(op);
    }
    case Tag::kBindStore: {
      edit::BindStore op;
      SHOAL_RETURN_IF_ERROR(DecodeStoreOp(in, &op));
      return EditOp(op);
    }
    case Tag::kResetNode: {
      edit::ResetNode op;
      SHOAL_RETURN_IF_ERROR(DecodeStoreOp(in, &op));
      return EditOp(op);
    }
  }
  return InvalidArgumentError(fmt::format("shard map edit: unknown operation tag {}", raw_tag));
}

std::string NodeList(const std::vector<NodeId>& nodes) {
  std::vector<std::string> names;
  for (NodeId node : nodes) names.push_back(node.DebugString());
  return fmt::format("[{}]", fmt::join(names, ","));
}

struct OpPrinter {
  std::string operator()(const edit::AddNode& op) const {
    return "AddNode(" + op.node.DebugString() + ")";
  }
  std::string operator()(const edit::RemoveNode& op) const {
    return "RemoveNode(" + op.node.DebugString() + ")";
  }
  std::string operator()(const edit::SetNodeState& op) const {
    return fmt::format("SetNodeState({}, {})", op.node.DebugString(), ToString(op.state));
  }
  std::string operator()(const edit::SplitBucket& op) const {
    return fmt::format("SplitBucket({}, at={:#018x}, upper={})", op.bucket.DebugString(), op.at,
                       op.upper.DebugString());
  }
  std::string operator()(const edit::MergeBuckets& op) const {
    return fmt::format("MergeBuckets({}, {})", op.left.DebugString(), op.right.DebugString());
  }
  std::string operator()(const edit::BeginTransition& op) const {
    return fmt::format("BeginTransition({}, {}, to={}, {})", op.bucket.DebugString(),
                       op.move.DebugString(), NodeList(op.destination), ToString(op.mode));
  }
  std::string operator()(const edit::AdvanceStage& op) const {
    return fmt::format("AdvanceStage({}, {}, {})", op.bucket.DebugString(), op.move.DebugString(),
                       ToString(op.stage));
  }
  std::string operator()(const edit::CommitTransition& op) const {
    return fmt::format("CommitTransition({}, {})", op.bucket.DebugString(), op.move.DebugString());
  }
  std::string operator()(const edit::FinishTransition& op) const {
    return fmt::format("FinishTransition({}, {})", op.bucket.DebugString(), op.move.DebugString());
  }
  std::string operator()(const edit::AbortTransition& op) const {
    return fmt::format("AbortTransition({}, {})", op.bucket.DebugString(), op.move.DebugString());
  }
  std::string operator()(const edit::RemoveReplica& op) const {
    return fmt::format("RemoveReplica({}, {})", op.bucket.DebugString(), op.node.DebugString());
  }
  std::string operator()(const edit::DropReplica& op) const {
    return fmt::format("DropReplica({}, {})", op.bucket.DebugString(), op.node.DebugString());
  }
  std::string operator()(const edit::PromoteReplica& op) const {
    return fmt::format("PromoteReplica({}, {})", op.bucket.DebugString(), op.node.DebugString());
  }
  std::string operator()(const edit::ForcePrimary& op) const {
    return fmt::format("ForcePrimary({}, {})", op.bucket.DebugString(), op.node.DebugString());
  }
  std::string operator()(const edit::SetReplication& op) const {
    return fmt::format("SetReplication(K={}, min_in_sync={})", op.replication_factor,
                       op.min_in_sync);
  }
  std::string operator()(const edit::BindStore& op) const {
    return fmt::format("BindStore({}, {:#x})", op.node.DebugString(), op.store_id);
  }
  std::string operator()(const edit::ResetNode& op) const {
    return fmt::format("ResetNode({}, {:#x})", op.node.DebugString(), op.store_id);
  }
};

}  // namespace

std::string DebugString(const EditOp& op) { return std::visit(OpPrinter{}, op); }

void ShardMapEdit::EncodeTo(std::string* out) const {
  PutByte(out, kFormatVersion);
  PutVarint(out, base_epoch_.value());
  PutVarint(out, ops_.size());
  for (const EditOp& op : ops_) std::visit(OpEncoder{out}, op);
}

std::string ShardMapEdit::Encode() const {
  std::string out;
  EncodeTo(&out);
  return out;
}

StatusOr<ShardMapEdit> ShardMapEdit::Decode(std::string_view bytes) {
  VarintReader in(bytes, "shard map edit");
  uint8_t version = 0;
  SHOAL_RETURN_IF_ERROR(in.Byte("format version", &version));
  if (version != kFormatVersion) {
    return InvalidArgumentError(fmt::format("shard map edit: unknown format version {}", version));
  }
  ShardMapEdit result;
  SHOAL_RETURN_IF_ERROR(in.Read("base epoch", &result.base_epoch_));
  uint64_t count = 0;
  SHOAL_RETURN_IF_ERROR(in.Varint64("operation count", &count));
  // Every operation takes at least two bytes.
  if (count > in.remaining() / 2) {
    return InvalidArgumentError(
        fmt::format("shard map edit: operation count {} exceeds the input", count));
  }
  result.ops_.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    StatusOr<EditOp> op = DecodeOp(in);
    if (!op.ok()) return Prefixed(op.status(), fmt::format("operation {}", i));
    result.ops_.push_back(std::move(op).value());
  }
  if (in.remaining() != 0) {
    return InvalidArgumentError(fmt::format("shard map edit: {} trailing bytes", in.remaining()));
  }
  return result;
}

std::string ShardMapEdit::DebugString() const {
  std::vector<std::string> ops;
  for (const EditOp& op : ops_) ops.push_back(cluster::DebugString(op));
  return fmt::format("ShardMapEdit{{base={} ops=[{}]}}", base_epoch_.DebugString(),
                     fmt::join(ops, ", "));
}

}  // namespace shoal::cluster
