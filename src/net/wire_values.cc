// Values shared by requests and responses: addresses, statuses, ranges, documents, maps.

#include <fmt/format.h>

#include "src/cluster/shard_map_codec.h"
#include "src/net/wire_codec.h"
#include "src/storage/errors.h"

namespace shoal::net {

void ToWire(const transport::Address& address, wire::Address* out) {
  out->set_kind(static_cast<wire::Address::Kind>(address.kind));
  out->set_id(address.id);
}

StatusOr<transport::Address> FromWire(const wire::Address& address) {
  transport::Address out;
  switch (address.kind()) {
    case wire::Address::COORDINATOR:
      out.kind = transport::Address::Kind::kCoordinator;
      break;
    case wire::Address::NODE:
      out.kind = transport::Address::Kind::kNode;
      break;
    case wire::Address::CLIENT:
      out.kind = transport::Address::Kind::kClient;
      break;
    default:
      return InvalidArgumentError(fmt::format("unknown address kind {}", address.kind()));
  }
  out.id = address.id();
  return out;
}

void ToWire(const Status& status, wire::Status* out) {
  out->set_code(static_cast<int32_t>(status.code()));
  out->set_message(std::string(MessageOf(status)));
  if (auto error = transport::ClusterErrorOf(status); error.has_value()) {
    out->set_cluster_error(static_cast<wire::Status::ClusterError>(*error));
  }
  if (auto reason = storage::ReasonOf(status); reason.has_value()) {
    // Shifted by one: 0 means "no reason" on the wire.
    out->set_storage_reason(
        static_cast<wire::Status::StorageReason>(static_cast<int>(*reason) + 1));
  }
}

Status FromWire(const wire::Status& status) {
  const int code = status.code();
  if (code < 0 || code > static_cast<int>(StatusCode::kUnauthenticated)) {
    return InternalError(fmt::format("peer sent status code {}: {}", code, status.message()));
  }
  if (code == 0) return OkStatus();
  const int cluster_error = status.cluster_error();
  if (cluster_error >= 1 &&
      cluster_error <= static_cast<int>(transport::ClusterError::kStaleTerm)) {
    return transport::MakeClusterError(static_cast<transport::ClusterError>(cluster_error),
                                       status.message());
  }
  const int reason = status.storage_reason();
  if (reason >= 1 && reason <= static_cast<int>(storage::kLastErrorReason) + 1) {
    return storage::StorageError(static_cast<storage::ErrorReason>(reason - 1), status.message());
  }
  return MakeStatus(static_cast<StatusCode>(code), status.message());
}

void ToWire(const storage::PointRange& range, wire::PointRange* out) {
  out->set_begin(range.begin());
  out->set_end(range.end_is_max() ? 0 : range.end());
  out->set_end_is_max(range.end_is_max());
}

StatusOr<storage::PointRange> FromWire(const wire::PointRange& range) {
  if (range.end_is_max()) return storage::PointRange::From(range.begin());
  return storage::PointRange::Make(range.begin(), range.end());
}

void ToWire(const storage::Document& document, wire::Document* out) {
  out->set_collection(document.collection.value());
  out->set_primary_key(document.primary_key);
  out->set_body(document.body);
  out->set_version(document.version);
  out->set_tombstone(document.tombstone);
}

storage::Document FromWire(const wire::Document& document) {
  return storage::Document{.collection = CollectionId(document.collection()),
                           .primary_key = document.primary_key(),
                           .body = document.body(),
                           .version = document.version(),
                           .tombstone = document.tombstone()};
}

void ToWire(const storage::ReplicaState& state, wire::ReplicaState* out) {
  out->set_term(state.position.term.value());
  out->set_rseq(state.position.rseq);
  for (const storage::TermStart& start : state.history) {
    auto* w = out->add_history();
    w->set_term(start.term.value());
    w->set_first_rseq(start.first_rseq);
  }
}

StatusOr<storage::ReplicaState> FromWire(const wire::ReplicaState& state) {
  storage::ReplicaState out;
  out.position = storage::ReplicaPosition{.term = Term(state.term()), .rseq = state.rseq()};
  for (const auto& start : state.history()) {
    out.history.push_back(
        storage::TermStart{.term = Term(start.term()), .first_rseq = start.first_rseq()});
  }
  if (Status s = out.CheckInvariants(); !s.ok()) {
    return InvalidArgumentError(fmt::format("replica state: {}", s.message()));
  }
  return out;
}

void ToWire(const storage::ExportedRange& exported, wire::ExportedRange* out) {
  ToWire(exported.range, out->mutable_range());
  for (const auto& file : exported.files) out->add_files(file);
  out->set_sequence(exported.sequence);
  out->set_entries(exported.entries);
  out->set_bytes(exported.bytes);
  out->set_max_version(exported.max_version);
  out->set_live_documents(exported.live_documents);
  out->set_live_bytes(exported.live_bytes);
}

StatusOr<storage::ExportedRange> FromWire(const wire::ExportedRange& exported) {
  storage::ExportedRange out;
  SHOAL_ASSIGN_OR_RETURN(out.range, FromWire(exported.range()));
  out.files.assign(exported.files().begin(), exported.files().end());
  out.sequence = exported.sequence();
  out.entries = exported.entries();
  out.bytes = exported.bytes();
  out.max_version = exported.max_version();
  out.live_documents = exported.live_documents();
  out.live_bytes = exported.live_bytes();
  if (out.live_documents > out.entries || out.live_bytes > out.bytes) {
    return InvalidArgumentError("exported range: live part larger than the whole");
  }
  return out;
}

std::string EncodeMap(const cluster::ShardMapPtr& map) {
  return map == nullptr ? std::string() : cluster::EncodeShardMap(*map);
}

StatusOr<cluster::ShardMapPtr> DecodeMap(const std::string& bytes) {
  if (bytes.empty()) return cluster::ShardMapPtr(nullptr);
  auto map = cluster::DecodeShardMap(bytes);
  if (!map.ok()) return InvalidArgumentError(fmt::format("map: {}", MessageOf(map.status())));
  return std::make_shared<const cluster::ShardMap>(std::move(*map));
}

void ToWire(const cluster::ShardMap& map, wire::ShardMap* out) {
  out->set_epoch(map.epoch().value());
  out->set_replication_factor(map.replication_factor());
  out->set_min_in_sync(map.min_in_sync());
  out->mutable_nodes()->Reserve(static_cast<int>(map.nodes().size()));
  for (const cluster::NodeInfo& node : map.nodes()) {
    auto* n = out->add_nodes();
    n->set_id(node.id.value());
    n->set_store_id(node.store_id);
    switch (node.state) {
      case cluster::NodeState::kActive:
        n->set_state(wire::MapNode::ACTIVE);
        break;
      case cluster::NodeState::kLeaving:
        n->set_state(wire::MapNode::LEAVING);
        break;
    }
  }
  out->mutable_buckets()->Reserve(static_cast<int>(map.buckets().size()));
  for (const cluster::BucketPlacement& bucket : map.buckets()) {
    auto* b = out->add_buckets();
    b->set_id(bucket.id.value());
    auto* range = b->mutable_range();
    range->set_begin(bucket.range.begin());
    range->set_end(bucket.range.end());
    range->set_end_is_max(bucket.range.end_is_max());
    for (NodeId node : bucket.replicas) b->add_replicas(node.value());
    b->set_owner(cluster::OwnerOf(bucket).value());
    b->set_term(bucket.term.value());
    if (!bucket.transition.has_value()) continue;
    const cluster::BucketTransition& t = *bucket.transition;
    auto* w = b->mutable_transition();
    w->set_move(t.move.value());
    for (NodeId node : t.source) w->add_source(node.value());
    for (NodeId node : t.destination) w->add_destination(node.value());
    // Stored stages and the modes have the same numbers on the wire and in transition.h.
    w->set_stage(static_cast<wire::MapTransition::Stage>(t.stage));
    w->set_mode(static_cast<wire::MapTransition::Mode>(t.mode));
  }
}

namespace {

std::vector<NodeId> NodesOf(const google::protobuf::RepeatedField<uint32_t>& ids) {
  std::vector<NodeId> out;
  out.reserve(ids.size());
  for (uint32_t id : ids) out.emplace_back(id);
  return out;
}

StatusOr<cluster::BucketTransition> FromWire(const wire::MapTransition& t) {
  if (!wire::MapTransition::Stage_IsValid(t.stage())) {
    return InvalidArgumentError(fmt::format("unknown transition stage {}", t.stage()));
  }
  if (!wire::MapTransition::Mode_IsValid(t.mode())) {
    return InvalidArgumentError(fmt::format("unknown transition mode {}", t.mode()));
  }
  return cluster::BucketTransition{.move = MoveId(t.move()),
                                   .source = NodesOf(t.source()),
                                   .destination = NodesOf(t.destination()),
                                   .stage = static_cast<cluster::TransitionStage>(t.stage()),
                                   .mode = static_cast<cluster::TransitionMode>(t.mode())};
}

StatusOr<cluster::BucketPlacement> FromWire(const wire::MapBucket& b) {
  cluster::BucketPlacement out;
  out.id = BucketId(b.id());
  if (b.range().end_is_max()) {
    out.range = cluster::BucketRange::ToMax(b.range().begin());
  } else {
    SHOAL_ASSIGN_OR_RETURN(out.range,
                           cluster::BucketRange::Make(b.range().begin(), b.range().end()));
  }
  out.replicas = NodesOf(b.replicas());
  out.term = Term(b.term());
  if (b.has_transition()) {
    SHOAL_ASSIGN_OR_RETURN(out.transition, FromWire(b.transition()));
  }
  return out;
}

}  // namespace

StatusOr<cluster::ShardMapPtr> FromWire(const wire::ShardMap& map) {
  std::vector<cluster::NodeInfo> nodes;
  nodes.reserve(map.nodes().size());
  for (const wire::MapNode& n : map.nodes()) {
    cluster::NodeInfo node{
        .id = NodeId(n.id()), .state = cluster::NodeState::kActive, .store_id = n.store_id()};
    switch (n.state()) {
      case wire::MapNode::ACTIVE:
        break;
      case wire::MapNode::LEAVING:
        node.state = cluster::NodeState::kLeaving;
        break;
      default:
        return InvalidArgumentError(fmt::format("map: unknown node state {}", n.state()));
    }
    // Strict order, as in the byte form (Create would sort silently).
    if (!nodes.empty() && !(nodes.back().id < node.id)) {
      return InvalidArgumentError(fmt::format("map: node {} out of order", n.id()));
    }
    nodes.push_back(node);
  }
  std::vector<cluster::BucketPlacement> buckets;
  buckets.reserve(map.buckets().size());
  for (const wire::MapBucket& b : map.buckets()) {
    auto bucket = FromWire(b);
    if (!bucket.ok())
      return InvalidArgumentError(fmt::format("map: {}", MessageOf(bucket.status())));
    buckets.push_back(*std::move(bucket));
  }
  if (map.min_in_sync() == 0) return InvalidArgumentError("map: min_in_sync 0");
  auto created = cluster::ShardMap::Create(MapEpoch(map.epoch()), map.replication_factor(),
                                           std::move(nodes), std::move(buckets), map.min_in_sync());
  if (!created.ok()) {
    return InvalidArgumentError(fmt::format("map: {}", MessageOf(created.status())));
  }
  // Create sorted the buckets by begin; the message's must have been in that order already.
  // The owners are checked against the map as built, whose transitions Create has checked.
  const auto placed = created->buckets();
  for (size_t i = 0; i < placed.size(); ++i) {
    const wire::MapBucket& b = map.buckets(static_cast<int>(i));
    if (b.id() != placed[i].id.value()) {
      return InvalidArgumentError(
          fmt::format("map: bucket {} out of order", placed[i].id.DebugString()));
    }
    if (b.owner() != cluster::OwnerOf(placed[i]).value()) {
      return InvalidArgumentError(fmt::format("map: {} names owner {}, not {}",
                                              placed[i].id.DebugString(), b.owner(),
                                              cluster::OwnerOf(placed[i]).DebugString()));
    }
  }
  return std::make_shared<const cluster::ShardMap>(*std::move(created));
}

void ToWire(const transport::ClusterState& state, wire::ClusterState* out) {
  out->set_map(EncodeMap(state.map));
  out->set_cluster_id(state.cluster_id);
  for (const auto& collection : state.collections) {
    auto* spec = out->add_collections();
    spec->set_id(collection.id.value());
    spec->set_name(collection.name);
  }
}

StatusOr<transport::ClusterState> FromWire(const wire::ClusterState& state) {
  transport::ClusterState out;
  SHOAL_ASSIGN_OR_RETURN(out.map, DecodeMap(state.map()));
  out.cluster_id = state.cluster_id();
  for (const auto& spec : state.collections()) {
    out.collections.push_back(
        storage::CollectionSpec{.id = CollectionId(spec.id()), .name = spec.name()});
  }
  return out;
}

void ToWire(const storage::DocumentFilter& filter, wire::DocumentFilter* out) {
  for (const auto& predicate : filter.all_of) {
    auto* p = out->add_all_of();
    p->set_path(predicate.path);
    p->set_op(static_cast<wire::FieldPredicate::CompareOp>(predicate.op));
    auto* value = p->mutable_value();
    std::visit(
        [value](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, std::nullptr_t>) {
            value->set_null_value(true);
          } else if constexpr (std::is_same_v<T, bool>) {
            value->set_bool_value(v);
          } else if constexpr (std::is_same_v<T, int64_t>) {
            value->set_int_value(v);
          } else if constexpr (std::is_same_v<T, double>) {
            value->set_double_value(v);
          } else {
            value->set_string_value(v);
          }
        },
        predicate.value);
  }
}

StatusOr<storage::DocumentFilter> FromWire(const wire::DocumentFilter& filter) {
  storage::DocumentFilter out;
  for (const auto& p : filter.all_of()) {
    if (p.op() < wire::FieldPredicate::EQ || p.op() > wire::FieldPredicate::GE) {
      return InvalidArgumentError(fmt::format("unknown comparison {}", static_cast<int>(p.op())));
    }
    storage::FieldPredicate predicate{
        .path = p.path(), .op = static_cast<storage::CompareOp>(p.op()), .value = nullptr};
    switch (p.value().value_case()) {
      case wire::FieldValue::kNullValue:
      case wire::FieldValue::VALUE_NOT_SET:
        predicate.value = nullptr;
        break;
      case wire::FieldValue::kBoolValue:
        predicate.value = p.value().bool_value();
        break;
      case wire::FieldValue::kIntValue:
        predicate.value = static_cast<int64_t>(p.value().int_value());
        break;
      case wire::FieldValue::kDoubleValue:
        predicate.value = p.value().double_value();
        break;
      case wire::FieldValue::kStringValue:
        predicate.value = p.value().string_value();
        break;
    }
    out.all_of.push_back(std::move(predicate));
  }
  return out;
}

void QuiescedToWire(const std::vector<transport::QuiescedBucket>& quiesced,
                    google::protobuf::RepeatedPtrField<wire::QuiescedBucket>* out) {
  for (const transport::QuiescedBucket& q : quiesced) {
    wire::QuiescedBucket* w = out->Add();
    w->set_bucket(q.bucket.value());
    w->set_token(q.token);
  }
}

std::vector<transport::QuiescedBucket> QuiescedFromWire(
    const google::protobuf::RepeatedPtrField<wire::QuiescedBucket>& quiesced) {
  std::vector<transport::QuiescedBucket> out;
  out.reserve(static_cast<size_t>(quiesced.size()));
  for (const wire::QuiescedBucket& q : quiesced) {
    out.push_back({.bucket = BucketId(q.bucket()), .token = q.token()});
  }
  return out;
}

}  // namespace shoal::net
