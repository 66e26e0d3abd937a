#include "src/process/admin.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "src/cluster/move_ends.h"
#include "src/net/wire_codec.h"

namespace shoal::process {
namespace {

std::optional<NodeId> NodeOrNone(uint32_t id) {
  return id == 0 ? std::nullopt : std::optional<NodeId>(NodeId(id));
}

void FillProgress(coordinator::Coordinator& coordinator, wire::AdminResponse* out) {
  const coordinator::MoveProgress progress = coordinator.progress();
  out->set_moves_started(progress.started);
  out->set_moves_committed(progress.committed);
  out->set_moves_aborted(progress.aborted);
  out->set_moves_in_flight(progress.in_flight);
  out->set_bytes_moved(progress.bytes_moved);
  out->set_bytes_planned(progress.bytes_planned);
  out->set_bytes_copied(progress.bytes_copied);
  auto balanced = coordinator.Balanced();
  out->set_balanced(balanced.ok() && *balanced);
  if (auto map = coordinator.map(); map != nullptr) out->set_epoch(map->epoch().value());
  const coordinator::Thresholds thresholds = coordinator.thresholds();
  out->set_split_bytes(thresholds.split_bytes);
  out->set_merge_bytes(thresholds.merge_bytes);
  out->set_pending_min_in_sync(coordinator.pending_min_in_sync());
}

void FillHeldCopies(coordinator::Coordinator& coordinator, wire::AdminResponse* out) {
  for (const auto& [bucket, holders] : coordinator.CopiesOutsideReplicas()) {
    for (const coordinator::HeldCopies::Holder& holder : holders) {
      wire::HeldCopyStatus* copy = out->add_held_copies();
      copy->set_bucket(bucket.value());
      copy->set_node(holder.node.value());
      copy->set_term(holder.position.term.value());
      copy->set_rseq(holder.position.rseq);
    }
  }
}

Status SetThresholds(coordinator::Coordinator& coordinator,
                     const wire::AdminRequest::SetThresholds& request) {
  if (!request.has_split_bytes() && !request.has_merge_bytes()) {
    return InvalidArgumentError("set thresholds: give split_bytes, merge_bytes or both");
  }
  return coordinator.SetThresholds(
      request.has_split_bytes() ? std::optional<uint64_t>(request.split_bytes()) : std::nullopt,
      request.has_merge_bytes() ? std::optional<uint64_t>(request.merge_bytes()) : std::nullopt);
}

// A planned move in the operator's words (cluster::EndsOf).
void FillPlannedMove(const cluster::MoveIntent& move, wire::PlannedMove* out) {
  out->set_bucket(move.bucket.value());
  out->set_bytes(move.bytes);
  const cluster::MoveEnds ends = cluster::EndsOf(move.source, move.destination);
  out->set_from(ends.from.value());
  out->set_to(ends.to.value());
  out->set_mode(ends.handoff ? std::string("handoff") : std::string(cluster::ToString(move.mode)));
}

Status FillPlan(coordinator::Coordinator& coordinator, const wire::AdminRequest::Plan& request,
                wire::AdminResponse* out) {
  SHOAL_ASSIGN_OR_RETURN(coordinator::PlanSummary summary,
                         coordinator.Plan(NodeOrNone(request.add()), NodeOrNone(request.remove())));
  for (const auto& move : summary.plan.moves) FillPlannedMove(move, out->add_moves());
  out->set_splits(summary.plan.splits.size());
  out->set_merges(summary.plan.merges.size());
  out->set_plan_bytes(summary.bytes);
  out->set_estimated_seconds(summary.estimated_seconds);
  return OkStatus();
}

}  // namespace

void HandleAdmin(coordinator::Coordinator& coordinator, const wire::AdminRequest& request,
                 wire::AdminResponse* out) {
  Status status;
  switch (request.body_case()) {
    case wire::AdminRequest::kAddNode:
      status = request.add_node().node() == 0
                   ? InvalidArgumentError("node id 0 is reserved")
                   : coordinator.AddNode(NodeId(request.add_node().node()));
      break;
    case wire::AdminRequest::kRemoveNode:
      status = coordinator.RemoveNode(NodeId(request.remove_node().node()));
      break;
    case wire::AdminRequest::kPlan:
      status = FillPlan(coordinator, request.plan(), out);
      break;
    case wire::AdminRequest::kRebalance:
      coordinator.SetAutoBalance(true);
      break;
    case wire::AdminRequest::kProgress:
      FillHeldCopies(coordinator, out);
      break;
    case wire::AdminRequest::kSetThresholds:
      status = SetThresholds(coordinator, request.set_thresholds());
      break;
    case wire::AdminRequest::kSetReplication:
      status = coordinator.SetReplication(request.set_replication().replication_factor(),
                                          request.set_replication().min_in_sync());
      break;
    case wire::AdminRequest::kForcePrimary:
      status = coordinator.ForcePrimary(BucketId(request.force_primary().bucket()),
                                        NodeId(request.force_primary().node()));
      break;
    case wire::AdminRequest::kSetFailpoints:
      // The runtime answers it before any handler (GrpcRuntime::HandleAdmin).
      status = InternalError("failpoints are set by the process's runtime");
      break;
    case wire::AdminRequest::kAddUser:
    case wire::AdminRequest::kRemoveUser:
    case wire::AdminRequest::kListUsers:
    case wire::AdminRequest::kSetPassword:
    case wire::AdminRequest::kGrantRole:
    case wire::AdminRequest::kGetUserTable:
      // The coordinator process answers them before any handler (UserAdmin).
      status = InternalError("users are administered by the coordinator process");
      break;
    case wire::AdminRequest::BODY_NOT_SET:
      status = InvalidArgumentError("admin request without a body");
      break;
  }
  net::ToWire(status, out->mutable_status());
  FillProgress(coordinator, out);
}

}  // namespace shoal::process
