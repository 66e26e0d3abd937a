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
      cluster_error <= static_cast<int>(transport::ClusterError::kStaleMove)) {
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

void ToWire(const transport::ClusterState& state, wire::ClusterState* out) {
  out->set_map(EncodeMap(state.map));
  for (const auto& collection : state.collections) {
    auto* spec = out->add_collections();
    spec->set_id(collection.id.value());
    spec->set_name(collection.name);
  }
}

StatusOr<transport::ClusterState> FromWire(const wire::ClusterState& state) {
  transport::ClusterState out;
  SHOAL_ASSIGN_OR_RETURN(out.map, DecodeMap(state.map()));
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

}  // namespace shoal::net
