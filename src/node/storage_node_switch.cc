// The destination side of a switched switch-then-copy move (kCopy, kCatchUp; paper 002 §5.3-5.4,
// paper 001 §4.2; docs/design/cluster.md, "Switch-then-copy"): requests the destination admits but
// cannot answer alone are run at the source, and the background transfer of the rest. The
// invariants are in storage_node.h (SWITCH-THEN-COPY).

#include <fmt/format.h>

#include <span>

#include "src/node/node_ranges.h"
#include "src/node/storage_node.h"
#include "src/storage/errors.h"
#include "src/transport/classify.h"

namespace shoal::node {

using cluster::BucketPlacement;
using transport::Address;
using transport::Response;

Response StorageNode::ForwardFailure(const StatusOr<Response>& response, bool idempotent) {
  if (!response.ok()) {
    const Status& status = response.status();
    if (status.code() == StatusCode::kCancelled) return Response::Error(status);
    switch (transport::Classify(status, transport::StatusOrigin::kCall, idempotent)) {
      case transport::RetryAction::kUnknownOutcome:
        // The source may have applied the write: the client must not retry it blindly.
        return Response::Error(transport::OutcomeUnknown(status));
      case transport::RetryAction::kDone:
      case transport::RetryAction::kLearnRoute:
      case transport::RetryAction::kResend:
      case transport::RetryAction::kBackOff:
      case transport::RetryAction::kGiveUp:
        return Response::Error(transport::MakeClusterError(
            transport::ClusterError::kNotServing,
            fmt::format("n{}: the source does not answer ({}); retry", options_.id.value(),
                        std::string(status.message()))));
    }
  }
  const Response& answer = *response;
  if (answer.route != nullptr) {
    absl::MutexLock lock(&mu_);
    InstallLocked(transport::ClusterState{.map = answer.route, .collections = {}});
  }
  const auto cluster_error = transport::ClusterErrorOf(answer.status);
  if (cluster_error == transport::ClusterError::kWrongShard ||
      cluster_error == transport::ClusterError::kStaleMove) {
    // The move went on (committed) or our map is behind the source's: the client retries and
    // we decide again with the newer map.
    return Response::Error(transport::MakeClusterError(
        transport::ClusterError::kNotServing,
        fmt::format("n{}: the move changed while forwarding; retry", options_.id.value())));
  }
  return Response::Error(answer.status);
}

Response StorageNode::ForwardWrite(const transport::WriteRequest& request, const Admitted& admitted,
                                   storage::WalSync wal_sync) {
  transport::WriteRequest forwarded = request;
  forwarded.epoch = epoch();
  forwarded.via_move = admitted.move;
  auto response =
      runtime_.Call(Address::Node(admitted.source), std::move(forwarded), options_.call_timeout);
  Response out;
  if (!response.ok() || !response->status.ok()) {
    out = ForwardFailure(response, /*idempotent=*/false);
  } else if (auto body = transport::BodyAs<transport::WriteResponse>(std::move(*response));
             !body.ok()) {
    out = Response::Error(body.status());
  } else {
    // The source decided and stamped the version; keep the result here (unless a newer version
    // arrived meanwhile) before acknowledging, so that this node holds every acknowledged write.
    const bool tombstone = request.op == transport::WriteOp::kDelete;
    const storage::Document result{.collection = request.collection,
                                   .primary_key = request.primary_key,
                                   .body = tombstone ? std::string() : request.body,
                                   .version = body->version,
                                   .tombstone = tombstone};
    // The source synced it before answering; here it is synced now or, in a batch
    // (kDeferred), by the batch's one sync before the client's acknowledgement. A copy held from
    // before stops vouching for the range first (COPIES VOUCH FOR THEIR DATA).
    Status forgotten = ForgetCopy(admitted.bucket);
    auto applied = forgotten.ok() ? store_->ApplyChanges(
                                        std::span<const storage::Document>(&result, 1), wal_sync)
                                  : StatusOr<std::vector<storage::MutationResult>>(forgotten);
    if (!applied.ok()) {
      out = Response::Error(
          MakeStatus(StatusCode::kUnknown,
                     fmt::format("outcome unknown: applied at the source, not at n{}: {}",
                                 options_.id.value(), applied.status().ToString())));
    } else {
      RecordWrite(request.collection, request.primary_key);
      out = Response::Ok(transport::WriteResponse{.version = body->version});
    }
  }
  Release(admitted.bucket, /*write=*/true);
  return out;
}

Response StorageNode::ForwardGet(const transport::GetRequest& request, const Admitted& admitted) {
  auto finish = [&](Response response) {
    Release(admitted.bucket, /*write=*/false);
    return response;
  };
  auto answer = [&](const storage::Document& document) {
    if (document.tombstone) {
      return Response::Error(
          storage::StorageError(storage::ErrorReason::kNotFound,
                                fmt::format("document {} is deleted", document.primary_key)));
    }
    return Response::Ok(transport::GetResponse{.document = document});
  };
  // Always read at the source, even when this node holds the key: the source may have run a
  // forwarded write whose reply never came back here (the forward timed out, or an earlier
  // incarnation of this node sent it and crashed, and the source ran it afterwards), so a local
  // copy can be older than a write that has taken effect.
  auto response = runtime_.Call(Address::Node(admitted.source),
                                transport::GetRequest{.epoch = epoch(),
                                                      .collection = request.collection,
                                                      .primary_key = request.primary_key,
                                                      .via_move = admitted.move,
                                                      .include_tombstones = true},
                                options_.call_timeout);
  if (response.ok() && storage::Is(response->status, storage::ErrorReason::kNotFound)) {
    return finish(Response::Error(response->status));
  }
  if (!response.ok() || !response->status.ok()) {
    return finish(ForwardFailure(response, /*idempotent=*/true));
  }
  auto body = transport::BodyAs<transport::GetResponse>(std::move(*response));
  if (!body.ok()) return finish(Response::Error(body.status()));
  // Keep what was read: a later read here must not return an older state than this one did.
  if (Status s = ForgetCopy(admitted.bucket); !s.ok()) return finish(Response::Error(s));
  auto applied = store_->ApplyChanges(std::span<const storage::Document>(&body->document, 1));
  if (!applied.ok()) return finish(Response::Error(applied.status()));
  return finish(answer(body->document));
}

Response StorageNode::ForwardScan(const transport::ScanRequest& request, const Admitted& admitted) {
  // The source holds every document of the bucket (it applies every write first), so it
  // answers the whole page.
  transport::ScanRequest forwarded = request;
  forwarded.epoch = epoch();
  forwarded.via_move = admitted.move;
  forwarded.include_tombstones = false;
  auto response =
      runtime_.Call(Address::Node(admitted.source), std::move(forwarded), options_.call_timeout);
  if (!response.ok() || !response->status.ok()) {
    return ForwardFailure(response, /*idempotent=*/true);
  }
  {
    absl::MutexLock lock(&mu_);
    ++counters_.reads;
  }
  response->route = nullptr;
  return std::move(*response);
}

Response StorageNode::HandleTransfer(const transport::TransferBucketRequest& request) {
  // Checks, under mu_, that this node is the destination of the move, switched (kCopy, or
  // kCatchUp for a pass after the seal).
  auto check = [&]() -> StatusOr<storage::PointRange> {
    absl::MutexLock lock(&mu_);
    SHOAL_ASSIGN_OR_RETURN(const BucketPlacement* placement,
                           MoveBucketLocked(request.bucket, request.move, /*as_source=*/false));
    const auto& t = *placement->transition;
    if (t.mode != cluster::TransitionMode::kSwitchThenCopy ||
        (t.stage != cluster::TransitionStage::kCopy &&
         t.stage != cluster::TransitionStage::kCatchUp)) {
      return transport::MakeClusterError(
          transport::ClusterError::kStaleMove,
          fmt::format("n{}: {} is not a switched switch-then-copy move", options_.id.value(),
                      request.move.DebugString()));
    }
    return ToPointRange(placement->range);
  };
  auto range = check();
  if (!range.ok()) {
    if (Status s = RefreshMap(); !s.ok()) return Response::Error(s);
    range = check();
    if (!range.ok()) return Response::Error(range.status());
  }
  transport::TransferBucketResponse out{.next_cursor = request.cursor, .documents = 0, .bytes = 0};
  for (uint32_t page = 0; page < std::max<uint32_t>(request.max_pages, 1); ++page) {
    auto response =
        runtime_.Call(Address::Node(request.source),
                      transport::ScanRequest{.epoch = epoch(),
                                             .bucket = request.bucket,
                                             .range = *range,
                                             .collection = std::nullopt,
                                             .filter = {},
                                             .cursor = out.next_cursor,
                                             .max_documents = options_.max_scan_documents,
                                             .via_move = request.move,
                                             .include_tombstones = true},
                      options_.call_timeout);
    if (!response.ok()) return Response::Error(response.status());
    auto body = transport::BodyAs<transport::ScanResponse>(std::move(*response));
    if (!body.ok()) return Response::Error(body.status());
    if (auto still = check(); !still.ok()) return Response::Error(still.status());
    // Apply-if-newer: a document written or read through here since the switch stays.
    if (!body->documents.empty()) {
      if (Status s = ForgetCopy(request.bucket); !s.ok()) return Response::Error(s);
      auto applied = store_->ApplyChanges(body->documents);
      if (!applied.ok()) return Response::Error(applied.status());
    }
    uint64_t page_bytes = 0;
    for (const auto& document : body->documents) {
      page_bytes += document.primary_key.size() + document.body.size();
    }
    out.documents += body->documents.size();
    out.bytes += page_bytes;
    out.next_cursor = std::move(body->next_cursor);
    {
      absl::MutexLock lock(&mu_);
      counters_.bytes_ingested += page_bytes;
    }
    if (Status s = runtime_.Failpoint("destination.after_transfer_page"); !s.ok()) {
      return Response::Error(s);
    }
    if (out.next_cursor.empty()) break;
  }
  return Response::Ok(std::move(out));
}

}  // namespace shoal::node
