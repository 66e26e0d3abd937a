// StorageNode's batch gets (transport::BatchGetRequest; docs/design/network.md, "Coalescing").
// Invariants:
//   - a batch outside the limits of transport::ValidateBatchGet is refused whole, before any
//     read;
//   - every get goes through HandleGet at the batch's epoch, so admission, fencing (a fenced
//     bucket's get waits in its slot, as a single get waits), switch-then-copy forwarding and
//     the storage checks are exactly those of a single get;
//   - one slot's error (WRONG_SHARD, NOT_SERVING, NOT_FOUND...) never stops the others: the
//     gets are independent reads, so unlike a batch write no slot depends on an earlier one;
//   - when any slot is WRONG_SHARD the response carries the node's map as the route.

#include <utility>

#include "src/node/storage_node.h"

namespace shoal::node {

using transport::Response;

Response StorageNode::HandleBatchGet(const transport::BatchGetRequest& request) {
  if (Status s = transport::ValidateBatchGet(request.gets); !s.ok()) return Response::Error(s);
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
