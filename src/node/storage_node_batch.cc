// StorageNode's batch writes (transport::BatchWriteRequest; docs/design/cluster.md, "Batch
// writes"). Invariants:
//   - a batch outside the limits of transport::ValidateBatch is refused whole, before any write;
//   - every write goes through HandleWrite at the batch's epoch, so admission, fencing (checked
//     per key when admitted, and the in-flight count Fence waits for), switch-then-copy
//     forwarding and the storage limits are exactly those of a single write;
//   - writes are applied in the request's order, so two writes to one key in a batch take
//     effect in that order; one slot's error never stops the others (not atomic), except that
//     once a write to a key was not handled here (WRONG_SHARD, NOT_SERVING), the later writes
//     to that key in the batch are not handled either (NOT_SERVING): the client resends them
//     all, in order, so they never overtake the earlier one;
//   - when any slot is WRONG_SHARD the response carries the node's map as the route;
//   - DURABILITY: every write is applied without a WAL sync (WalSync::kDeferred), and the WAL is
//     synced once, after the last write and before the response, when the store syncs every
//     write (SyncPolicy::kEveryWrite). So no write is acknowledged before its WAL record is
//     durable, but another client may read a batch's write before it is (a machine crash in
//     that window loses a write that was read; a process crash does not: the record is in the
//     OS page cache). A failed sync turns every written slot into "outcome unknown". A write
//     forwarded to a switch-then-copy source is synced there (a single write) before the source
//     answers, and its local copy is covered by this batch's sync.

#include <fmt/format.h>

#include <utility>

#include "absl/container/flat_hash_set.h"
#include "src/node/storage_node.h"
#include "src/storage/errors.h"

namespace shoal::node {

using transport::Response;

Response StorageNode::HandleBatchWrite(const transport::BatchWriteRequest& request) {
  if (Status s = transport::ValidateBatch(request.writes); !s.ok()) return Response::Error(s);
  transport::BatchWriteResponse out;
  bool wrote = false;  // some slot wrote to the local store (only a successful one does)
  out.results.reserve(request.writes.size());
  cluster::ShardMapPtr route;
  // (collection, key) of the writes that were not handled (resent by the client).
  absl::flat_hash_set<std::pair<uint32_t, std::string_view>> deferred;
  for (const transport::WriteRequest& write : request.writes) {
    const std::pair<uint32_t, std::string_view> key(write.collection.value(), write.primary_key);
    if (deferred.contains(key)) {
      out.results.push_back(transport::BatchWriteResult{
          .status = transport::MakeClusterError(
              transport::ClusterError::kNotServing,
              "an earlier write to this key in the batch was not handled; retry"),
          .version = 0});
      continue;
    }
    transport::WriteRequest single = write;
    single.epoch = request.epoch;
    Response response = HandleWrite(single, storage::WalSync::kDeferred);
    wrote = wrote || response.status.ok();
    if (response.route != nullptr) route = std::move(response.route);
    const auto cluster_error = transport::ClusterErrorOf(response.status);
    if (cluster_error == transport::ClusterError::kWrongShard ||
        cluster_error == transport::ClusterError::kNotServing ||
        storage::Is(response.status, storage::ErrorReason::kUnavailable)) {
      deferred.insert(key);
    }
    uint64_t version = 0;
    if (const auto* body = std::get_if<transport::WriteResponse>(&response.body)) {
      version = body->version;
    }
    out.results.push_back(
        transport::BatchWriteResult{.status = std::move(response.status), .version = version});
    // A stopped node answers nothing more: the caller sees the call fail, as for one write.
    if (!runtime_.Alive()) return Response::Error(CancelledError("process stopped"));
  }
  if (wrote && store_->options().sync == storage::SyncPolicy::kEveryWrite) {
    if (Status synced = store_->SyncWal(); !synced.ok()) {
      for (transport::BatchWriteResult& result : out.results) {
        if (!result.status.ok()) continue;
        result.status =
            MakeStatus(StatusCode::kUnknown, fmt::format("outcome unknown: written, but the WAL "
                                                         "sync failed: {}",
                                                         synced.ToString()));
      }
    }
  }
  return Response{.status = OkStatus(), .body = std::move(out), .route = std::move(route)};
}

}  // namespace shoal::node
