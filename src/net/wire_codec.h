#pragma once

// Conversion between the typed messages of src/transport/messages.h and their proto form
// (proto/shoal.proto). Encoding cannot fail; decoding validates what the proto types cannot
// express (a range with end < begin, an undecodable map, an unknown enum value) and returns
// kInvalidArgument for it, so a malformed peer never reaches a Service.
//
// Stateless functions; thread-safe.

#include <vector>

#include "proto/shoal.pb.h"
#include "src/common/status.h"
#include "src/transport/messages.h"

namespace shoal::net {

void ToWire(const transport::Address& address, wire::Address* out);
[[nodiscard]] StatusOr<transport::Address> FromWire(const wire::Address& address);

// Status with its ClusterError or storage::ErrorReason payload.
void ToWire(const Status& status, wire::Status* out);
[[nodiscard]] Status FromWire(const wire::Status& status);

void ToWire(const transport::Request& request, wire::Request* out);
[[nodiscard]] StatusOr<transport::Request> FromWire(const wire::Request& request);

void ToWire(const transport::Response& response, wire::Response* out);
[[nodiscard]] StatusOr<transport::Response> FromWire(const wire::Response& response);

// Shared by both directions (wire_values.cc).
void ToWire(const storage::PointRange& range, wire::PointRange* out);
[[nodiscard]] StatusOr<storage::PointRange> FromWire(const wire::PointRange& range);
void ToWire(const storage::Document& document, wire::Document* out);
[[nodiscard]] storage::Document FromWire(const wire::Document& document);
void ToWire(const storage::ReplicaState& state, wire::ReplicaState* out);
[[nodiscard]] StatusOr<storage::ReplicaState> FromWire(const wire::ReplicaState& state);
void ToWire(const storage::ExportedRange& exported, wire::ExportedRange* out);
[[nodiscard]] StatusOr<storage::ExportedRange> FromWire(const wire::ExportedRange& exported);
void ToWire(const transport::ClusterState& state, wire::ClusterState* out);
[[nodiscard]] StatusOr<transport::ClusterState> FromWire(const wire::ClusterState& state);
void ToWire(const storage::DocumentFilter& filter, wire::DocumentFilter* out);
[[nodiscard]] StatusOr<storage::DocumentFilter> FromWire(const wire::DocumentFilter& filter);
void QuiescedToWire(const std::vector<transport::QuiescedBucket>& quiesced,
                    google::protobuf::RepeatedPtrField<wire::QuiescedBucket>* out);
[[nodiscard]] std::vector<transport::QuiescedBucket> QuiescedFromWire(
    const google::protobuf::RepeatedPtrField<wire::QuiescedBucket>& quiesced);
// A map in shard_map_codec bytes; "" decodes to nullptr.
[[nodiscard]] std::string EncodeMap(const cluster::ShardMapPtr& map);
[[nodiscard]] StatusOr<cluster::ShardMapPtr> DecodeMap(const std::string& bytes);
// The same map as messages (wire::ShardMap), for clients in other languages. Decoding checks
// every rule the byte form's decoder checks (ShardMap::Create), the enum values, and that each
// bucket's owner is cluster::OwnerOf of the bucket.
void ToWire(const cluster::ShardMap& map, wire::ShardMap* out);
[[nodiscard]] StatusOr<cluster::ShardMapPtr> FromWire(const wire::ShardMap& map);

// ToWire(response), plus what only the wire request asks for: the map as messages when a
// GetMapRequest has `structured` set. What a server answers to `request`.
void ToWireAnswering(const wire::Request& request, const transport::Response& response,
                     wire::Response* out);

}  // namespace shoal::net
