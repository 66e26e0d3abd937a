// StorageNode's batch gets (transport::BatchGetRequest; docs/design/network.md, "Coalescing").
// Invariants:
//   - a batch outside the limits of transport::ValidateBatchGet is refused whole, before any
//     read;
//   - each slot's result is the one the same get would have had alone at the batch's epoch;
//   - AT ONCE (the common case): when every get's bucket is served here right now (kServe, a
//     known collection, the client not ahead of the node's map), the admissions are taken
//     together under mu_, without a wait, and the store reads them all in one
//     BucketStore::GetMany (one MultiGet); a read of a bucket this node is the replicated
//     primary of then answers as a single get does, once its lease holds and what it read is
//     committed (AwaitReadable);
//   - ONE BY ONE (otherwise): every get goes through HandleGet at the batch's epoch, so
//     admission, fencing (a fenced bucket's get waits in its slot, as a single get waits),
//     switch-then-copy forwarding and the storage checks are exactly those of a single get;
//   - one slot's error (WRONG_SHARD, NOT_SERVING, NOT_FOUND...) never stops the others: the
//     gets are independent reads, so unlike a batch write no slot depends on an earlier one;
//   - when any slot is WRONG_SHARD the response carries the node's map as the route.

#include <optional>
#include <utility>
#include <vector>

#include "src/node/storage_node.h"

namespace shoal::node {

using transport::Response;

Response StorageNode::HandleBatchGet(const transport::BatchGetRequest& request) {
  if (Status s = transport::ValidateBatchGet(request.gets); !s.ok()) return Response::Error(s);
  std::optional<Response> at_once = ReadBatchAtOnce(request);
  return at_once.has_value() ? *std::move(at_once) : ReadBatchOneByOne(request);
}

std::optional<Response> StorageNode::ReadBatchAtOnce(const transport::BatchGetRequest& request) {
  // (ValidateBatchGet refused any get with via_move or include_tombstones.)
  std::vector<storage::DocumentKey> keys;
  keys.reserve(request.gets.size());
  for (const transport::GetRequest& get : request.gets) {
    keys.push_back({.collection = get.collection, .primary_key = get.primary_key});
  }
  std::optional<AdmittedAtOnce> admitted = AdmitAtOnce(request.epoch, keys, Access::kRead);
  if (!admitted.has_value()) return std::nullopt;
  std::vector<StatusOr<storage::Document>> documents = store_->GetMany(keys);
  // A replicated primary's reads answer once what they read is committed (after the read, as
  // HandleGet): usually at once.
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!admitted->replicated[i]) continue;
    if (Status readable = AwaitReadable(admitted->buckets[i], /*replicated=*/true, keys[i]);
        !readable.ok()) {
      documents[i] = readable;
    }
  }
  ReleaseAtOnce(admitted->buckets, Access::kRead);
  if (!runtime_.Alive()) return Response::Error(CancelledError("process stopped"));
  transport::BatchGetResponse out;
  out.results.reserve(documents.size());
  for (StatusOr<storage::Document>& document : documents) {
    if (document.ok()) {
      out.results.push_back(
          transport::BatchGetResult{.status = OkStatus(), .document = std::move(*document)});
    } else {
      out.results.push_back(transport::BatchGetResult{.status = document.status(), .document = {}});
    }
  }
  return Response::Ok(std::move(out));
}

Response StorageNode::ReadBatchOneByOne(const transport::BatchGetRequest& request) {
  transport::BatchGetResponse out;
  out.results.reserve(request.gets.size());
  cluster::ShardMapPtr route;
  for (const transport::GetRequest& get : request.gets) {
    transport::GetRequest single = get;
    single.epoch = request.epoch;
    Response response = HandleGet(single);
    if (response.route != nullptr) route = std::move(response.route);
    storage::Document document;
    if (auto* body = std::get_if<transport::GetResponse>(&response.body)) {
      document = std::move(body->document);
    }
    out.results.push_back(transport::BatchGetResult{.status = std::move(response.status),
                                                    .document = std::move(document)});
    // A stopped node answers nothing more: the caller sees the call fail, as for one get.
    if (!runtime_.Alive()) return Response::Error(CancelledError("process stopped"));
  }
  return Response{.status = OkStatus(), .body = std::move(out), .route = std::move(route)};
}

}  // namespace shoal::node
