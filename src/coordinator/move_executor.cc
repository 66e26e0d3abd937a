#include "src/coordinator/move_executor.h"

#include <fmt/format.h>

#include "src/common/log.h"
#include "src/coordinator/coordinator_internal.h"
#include "src/coordinator/move.h"

namespace shoal::coordinator {

using cluster::ShardMap;
using cluster::ShardMapEdit;
using cluster::ShardMapPtr;
using internal::MoveLogKey;
using internal::Retryable;

MoveExecutor::MoveExecutor(transport::Runtime& runtime, metadata::MetadataStore& store,
                           std::shared_ptr<MapCommitter> committer,
                           std::shared_ptr<Membership> membership,
                           std::shared_ptr<ProgressCounters> progress,
                           const CoordinatorOptions& options)
    : runtime_(runtime),
      store_(store),
      committer_(std::move(committer)),
      membership_(std::move(membership)),
      progress_(std::move(progress)),
      options_(options) {}

bool MoveExecutor::Claim(BucketId bucket, size_t max_claims) {
  absl::MutexLock lock(&mu_);
  if (max_claims > 0 && claimed_.size() >= max_claims) return false;
  return claimed_.insert(bucket).second;
}

void MoveExecutor::Release(BucketId bucket) {
  absl::MutexLock lock(&mu_);
  claimed_.erase(bucket);
}

size_t MoveExecutor::Claimed() const {
  absl::MutexLock lock(&mu_);
  return claimed_.size();
}

bool MoveExecutor::IsClaimed(BucketId bucket) const {
  absl::MutexLock lock(&mu_);
  return claimed_.count(bucket) != 0;
}

StatusOr<transport::Response> MoveExecutor::CallNode(NodeId node, transport::Request request,
                                                     int attempts, transport::Micros timeout) {
  if (timeout <= 0) timeout = options_.call_timeout;
  Status last;
  for (int attempt = 0; attempt < attempts; ++attempt) {
    auto response = runtime_.Call(transport::Address::Node(node), request, timeout);
    if (response.ok() && !Retryable(response->status)) return response;
    last = response.ok() ? response->status : response.status();
    if (last.code() == StatusCode::kCancelled) return last;
    if (!Retryable(last)) return last;
    SHOAL_RETURN_IF_ERROR(runtime_.Sleep(options_.retry_backoff << attempt));
  }
  return last;
}

Status MoveExecutor::Run(BucketId bucket, NodeId destination, cluster::TransitionMode mode,
                         uint64_t planned_bytes) {
  std::vector<NodeId> target{destination};
  if (ShardMapPtr current = committer_->map();
      current != nullptr && current->replication_factor() > 1) {
    const auto* placement = current->Find(bucket);
    if (placement == nullptr) return NotFoundError(bucket.DebugString());
    if (placement->replicas.size() >= current->replication_factor()) {
      return FailedPreconditionError(fmt::format(
          "{} has its {} copies (K = {}): a copy moves only by replacing a backup, which the "
          "balancer plans",
          bucket.DebugString(), placement->replicas.size(), current->replication_factor()));
    }
    target = placement->replicas;
    target.push_back(destination);
  }
  return RunTo(bucket, std::move(target), mode, planned_bytes);
}

Status MoveExecutor::RunTo(BucketId bucket, std::vector<NodeId> target,
                           cluster::TransitionMode mode, uint64_t planned_bytes) {
  // The incoming copy: in the target, not among the replicas (one at a time, checked below).
  NodeId destination;
  if (ShardMapPtr current = committer_->map(); current != nullptr) {
    const auto* placement = current->Find(bucket);
    for (NodeId node : target) {
      if (placement != nullptr && !placement->HasReplica(node)) destination = node;
    }
    // The destination must have checked in (the BEGIN below refuses a node that is no member).
    if (current->HasNode(destination)) {
      SHOAL_RETURN_IF_ERROR(membership_->CheckIn(destination, committer_->State()));
    }
  }
  // BEGIN.
  MoveId move;
  NodeId source;
  bool handoff = false;
  auto begun = committer_->CommitEdit([&](const ShardMap& map, ShardMapEdit* edit) {
    const auto* placement = map.Find(bucket);
    if (placement == nullptr) return NotFoundError(bucket.DebugString());
    if (placement->transition.has_value()) {
      return FailedPreconditionError(fmt::format("{} is moving", bucket.DebugString()));
    }
    if (target.empty() || placement->replicas.empty()) {
      return InvalidArgumentError(fmt::format("{}: an empty replica list", bucket.DebugString()));
    }
    std::vector<NodeId> incoming;
    for (NodeId node : target) {
      if (!placement->HasReplica(node)) incoming.push_back(node);
    }
    if (incoming.empty() && target.size() == 1) {
      return FailedPreconditionError(
          fmt::format("{} holds {} already", target.front().DebugString(), bucket.DebugString()));
    }
    const bool replicated = map.replication_factor() > 1;
    // A handoff (docs/design/replication.md §7): the same copies, another primary, no data.
    handoff = replicated && incoming.empty() && target.size() == placement->replicas.size() &&
              target.front() != placement->replicas.front();
    if (!handoff && incoming.size() != 1) {
      return FailedPreconditionError(
          fmt::format("{}: a move brings exactly one new copy ({} named)", bucket.DebugString(),
                      incoming.size()));
    }
    if (replicated) {
      if (!handoff && target.front() != placement->replicas.front()) {
        return FailedPreconditionError(fmt::format(
            "{}: the primary of a replicated bucket (K = {}) goes only to a backup in sync (a "
            "handoff), never to a copy being built",
            bucket.DebugString(), map.replication_factor()));
      }
      // A learner that joins the stream at the switch is not built: the new copy catches up
      // from the primary and joins at the fence.
      mode = cluster::TransitionMode::kCopyThenSwitch;
    }
    destination = handoff ? target.front() : incoming.front();
    const auto* info = map.FindNode(destination);
    if (info == nullptr || info->state != cluster::NodeState::kActive) {
      return FailedPreconditionError(
          fmt::format("{} cannot receive buckets", destination.DebugString()));
    }
    move = committer_->NextMoveId();
    source = placement->replicas.front();
    edit->BeginTransition(bucket, move, target, mode);
    return OkStatus();
  });
  if (!begun.ok()) return begun.status();
  internal::Move steps(*this, bucket, move, source, destination);
  // The log record goes with the map in the next edits; BEGIN is written on its own here so
  // that the record exists even if nothing else is ever written.
  auto logged =
      store_.Put(MoveLogKey(move),
                 fmt::format("BEGIN {} {} -> {} {}", bucket.DebugString(), source.DebugString(),
                             destination.DebugString(), cluster::ToString(mode)),
                 metadata::kAnyVersion);
  if (!logged.ok()) return steps.Abort(logged.status());
  log::Info("move.begin", {{"move", move.value()},
                           {"bucket", bucket.value()},
                           {"source", source.value()},
                           {"destination", destination.value()},
                           {"mode", cluster::ToString(mode)}});
  progress_->Started(planned_bytes);
  SHOAL_RETURN_IF_ERROR(runtime_.Failpoint("coordinator.after_begin"));
  if (handoff) return steps.Handoff();
  switch (mode) {
    case cluster::TransitionMode::kCopyThenSwitch:
      return steps.CopyThenSwitch(planned_bytes);
    case cluster::TransitionMode::kSwitchThenCopy:
      return steps.SwitchThenCopy();
  }
  return InternalError("unknown transition mode");
}

Status MoveExecutor::Resolve(BucketId bucket, const cluster::BucketTransition& transition,
                             std::string_view why) {
  const std::vector<NodeId> incoming = transition.Incoming();
  internal::Move steps(*this, bucket, transition.move, transition.source.front(),
                       incoming.empty() ? transition.destination.front() : incoming.front());
  if (cluster::IsCommitted(transition.stage)) return steps.FinishCommitted();
  if (cluster::AbortsOnFailure(transition.stage, transition.mode)) {
    return steps.Abort(AbortedError(why));
  }
  return steps.RollForwardSwitched(std::nullopt);  // switched: no way back
}

Status MoveExecutor::ResolveOrphans() {
  const ShardMapPtr map = committer_->map();
  if (map == nullptr) return OkStatus();
  for (const auto& bucket : map->buckets()) {
    if (!bucket.transition.has_value()) continue;
    // A task of this incarnation runs it: not an orphan.
    if (!Claim(bucket.id)) continue;
    const auto& t = *bucket.transition;
    log::Info("move.orphan", {{"move", t.move.value()},
                              {"bucket", bucket.id.value()},
                              {"stage", cluster::ToString(t.stage)}});
    const Status status = Resolve(bucket.id, t, "the move's task ended before the move");
    Release(bucket.id);
    if (status.code() == StatusCode::kCancelled) return status;
  }
  return OkStatus();
}

}  // namespace shoal::coordinator
