// The steps every move shares (the stage edits, catch-up, the finish and the abort) and the
// copy-then-switch protocol (paper 004 §5, ARCHITECTURE.md §3): the source serves until the
// fenced commit.

#include "src/coordinator/move.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "src/common/log.h"
#include "src/coordinator/coordinator_internal.h"

namespace shoal::coordinator::internal {

using cluster::ShardMap;
using cluster::ShardMapEdit;
using cluster::ShardMapPtr;
using cluster::TransitionStage;

std::string Move::Route() const {
  return fmt::format("{} {} -> {}", bucket_.DebugString(), source_.DebugString(),
                     destination_.DebugString());
}

Status Move::Fail(const Status& status) {
  x_.progress().Ended();
  // Cancelled: this incarnation is gone; recovery decides.
  if (status.code() == StatusCode::kCancelled) return status;
  return Abort(status);
}

Status Move::AdvanceStage(TransitionStage stage, std::optional<std::string> log) {
  auto edit = [&](const ShardMap&, ShardMapEdit* e) {
    e->AdvanceStage(bucket_, move_, stage);
    return OkStatus();
  };
  if (log.has_value()) {
    return x_.committer().CommitEdit(edit, MoveLogKey(move_), std::move(*log)).status();
  }
  return x_.committer().CommitEdit(edit).status();
}

Status Move::Commit(std::string_view suffix) {
  return x_.committer()
      .CommitEdit(
          [&](const ShardMap&, ShardMapEdit* edit) {
            edit->CommitTransition(bucket_, move_);
            return OkStatus();
          },
          MoveLogKey(move_), fmt::format("COMMIT {}{}", Route(), suffix))
      .status();
}

StatusOr<uint64_t> Move::CatchUpRounds(uint64_t after_sequence,
                                       std::optional<uint64_t> until_sequence, uint64_t* bytes) {
  const CoordinatorOptions& options = x_.options();
  uint64_t position = after_sequence;
  for (uint32_t round = 0; round < options.catch_up_rounds; ++round) {
    SHOAL_ASSIGN_OR_RETURN(
        transport::Response caught,
        x_.CallNode(destination_,
                    transport::CatchUpRequest{.move = move_,
                                              .bucket = bucket_,
                                              .source = source_,
                                              .after_sequence = position,
                                              .until_sequence = until_sequence,
                                              .stop_below = options.fence_backlog},
                    options.call_attempts));
    SHOAL_ASSIGN_OR_RETURN(auto body,
                           transport::BodyAs<transport::CatchUpResponse>(std::move(caught)));
    position = body.applied_sequence;
    if (bytes != nullptr) *bytes += body.applied_bytes;
    if (until_sequence.has_value() || body.applied < options.fence_backlog) break;
  }
  return position;
}

StatusOr<std::optional<uint64_t>> Move::ResumeFromLog() {
  const CoordinatorOptions& options = x_.options();
  const ShardMapPtr map = x_.committer().map();
  if (!options.resume_copies_from_log || map == nullptr || map->replication_factor() <= 1) {
    return std::optional<uint64_t>();
  }
  const cluster::NodeInfo* node = map->FindNode(destination_);
  // A store the map has not bound holds no copy of the bucket's history.
  if (node == nullptr || node->store_id == 0) return std::optional<uint64_t>();
  auto response = x_.CallNode(
      destination_,
      transport::ResumeCopyRequest{
          .move = move_, .bucket = bucket_, .source = source_, .store_id = node->store_id},
      options.call_attempts);
  auto answer = response.ok() ? transport::BodyAs<transport::ResumeCopyResponse>(*response)
                              : StatusOr<transport::ResumeCopyResponse>(response.status());
  // A node that does not know the request (another build) takes a snapshot. Any other failure
  // (the destination or the primary does not answer) would fail the snapshot's calls too: the
  // move fails, and its next attempt may still find the copy.
  if (!answer.ok() && answer.status().code() != StatusCode::kUnimplemented) {
    return answer.status();
  }
  if (!answer.ok() || !answer->sequence.has_value()) {
    log::Info("move.snapshot",
              {{"bucket", bucket_.value()},
               {"destination", destination_.value()},
               {"move", move_.value()},
               {"reason", answer.ok() ? answer->refused : answer.status().ToString()}});
    return std::optional<uint64_t>();
  }
  log::Info("move.resume", {{"bucket", bucket_.value()},
                            {"destination", destination_.value()},
                            {"move", move_.value()},
                            {"position", answer->position.DebugString()}});
  return answer->sequence;
}

Status Move::CopyThenSwitch(uint64_t planned_bytes) {
  transport::Runtime& runtime = x_.runtime();
  const CoordinatorOptions& options = x_.options();
  auto fail = [&](const Status& status) { return Fail(status); };
  // A copy the destination still holds resumes from the primary's log (replication.md §6):
  // no snapshot, and the catch-up starts where the primary's log holds what the copy lacks.
  auto resumed = ResumeFromLog();
  if (!resumed.ok()) return fail(resumed.status());
  uint64_t start_sequence = 0;
  uint64_t snapshot_bytes = 0;
  if (resumed->has_value()) {
    start_sequence = **resumed;
    x_.progress().CorrectPlanned(planned_bytes, 0);
    if (Status s = runtime.Failpoint("coordinator.after_resume"); !s.ok()) return s;
  } else {
    // Snapshot: export at the source, ingest (invisibly) at the destination.
    auto exported_response =
        x_.CallNode(source_, transport::ExportBucketRequest{.move = move_, .bucket = bucket_},
                    options.call_attempts);
    if (!exported_response.ok()) return fail(exported_response.status());
    auto exported =
        transport::BodyAs<transport::ExportBucketResponse>(std::move(*exported_response));
    if (!exported.ok()) return fail(exported.status());
    x_.progress().CorrectPlanned(planned_bytes, exported->exported.bytes);
    if (Status s = runtime.Failpoint("coordinator.after_export"); !s.ok()) return s;
    const uint64_t rate = std::max<uint64_t>(options.min_transfer_bytes_per_second, 1);
    const auto copy_time = static_cast<transport::Micros>(
        static_cast<double>(exported->exported.bytes) * 1e6 / static_cast<double>(rate));
    auto ingested =
        x_.CallNode(destination_,
                    transport::IngestBucketRequest{
                        .move = move_, .bucket = bucket_, .exported = exported->exported},
                    options.call_attempts, options.call_timeout + copy_time);
    if (!ingested.ok()) return fail(ingested.status());
    if (!ingested->status.ok()) return fail(ingested->status);
    x_.progress().Copied(exported->exported.bytes);
    if (Status s = runtime.Failpoint("coordinator.after_ingest"); !s.ok()) return s;
    start_sequence = exported->exported.sequence;
    snapshot_bytes = exported->exported.bytes;
  }

  // Catch-up.
  uint64_t caught_up_bytes = 0;
  if (Status s = AdvanceStage(TransitionStage::kCatchUp); !s.ok()) return fail(s);
  auto caught_up = CatchUpRounds(start_sequence, std::nullopt, &caught_up_bytes);
  if (!caught_up.ok()) return fail(caught_up.status());
  const uint64_t position = *caught_up;

  // Prepare: durable first, so that a restarted source fences by its map alone.
  if (Status s = AdvanceStage(TransitionStage::kPrepare); !s.ok()) return fail(s);
  if (Status s = runtime.Failpoint("coordinator.before_fence"); !s.ok()) return s;
  const transport::Micros fence_start = runtime.Now();
  auto fenced = x_.CallNode(source_, transport::FenceRequest{.move = move_, .bucket = bucket_},
                            options.call_attempts);
  if (!fenced.ok()) return fail(fenced.status());
  auto fence = transport::BodyAs<transport::FenceResponse>(std::move(*fenced));
  if (!fence.ok()) return fail(fence.status());
  const transport::Micros drain_start = runtime.Now();
  auto drained = x_.CallNode(destination_,
                             transport::CatchUpRequest{.move = move_,
                                                       .bucket = bucket_,
                                                       .source = source_,
                                                       .after_sequence = position,
                                                       .until_sequence = fence->sequence,
                                                       .stop_below = 0,
                                                       .replica = fence->replica},
                             options.call_attempts);
  if (!drained.ok()) return fail(drained.status());
  if (!drained->status.ok()) return fail(drained->status);
  transport::CatchUpResponse drain_report;
  if (auto* body = std::get_if<transport::CatchUpResponse>(&drained->body)) drain_report = *body;
  caught_up_bytes += drain_report.applied_bytes;
  if (Status s = runtime.Failpoint("coordinator.before_commit"); !s.ok()) return s;

  // COMMIT: the map with the committed transition is the commit point.
  const transport::Micros commit_start = runtime.Now();
  if (Status s = Commit(resumed->has_value() ? " (resumed from the log)" : ""); !s.ok()) {
    return fail(s);
  }
  const transport::Micros now = runtime.Now();
  x_.progress().Committed(snapshot_bytes);
  x_.progress().CaughtUp(caught_up_bytes, /*resumed=*/resumed->has_value());
  x_.progress().FenceWindowEnded({.fence_call_micros = drain_start - fence_start,
                                  .drain_micros = commit_start - drain_start,
                                  .drain_read_micros = drain_report.read_micros,
                                  .drain_apply_micros = drain_report.apply_micros,
                                  .commit_micros = now - commit_start},
                                 destination_, now);
  if (Status s = runtime.Failpoint("coordinator.after_commit"); !s.ok()) return s;
  Status finished = FinishCommitted();
  x_.progress().Ended();
  if (finished.ok() && options.max_bytes_per_second > 0) {
    // Throttle: the next move of this task waits as long as this one's bytes take at the rate.
    const auto pause = static_cast<transport::Micros>((snapshot_bytes + caught_up_bytes) *
                                                      1'000'000 / options.max_bytes_per_second);
    (void)runtime.Sleep(pause);
  }
  return finished;
}

Status Move::Handoff() {
  transport::Runtime& runtime = x_.runtime();
  const CoordinatorOptions& options = x_.options();
  if (Status s = AdvanceStage(TransitionStage::kCatchUp); !s.ok()) return Fail(s);
  if (Status s = AdvanceStage(TransitionStage::kPrepare); !s.ok()) return Fail(s);
  if (Status s = runtime.Failpoint("coordinator.before_fence"); !s.ok()) return s;
  auto fenced = x_.CallNode(source_, transport::FenceRequest{.move = move_, .bucket = bucket_},
                            options.call_attempts);
  if (!fenced.ok()) return Fail(fenced.status());
  if (!fenced->status.ok()) return Fail(fenced->status);
  if (Status s = runtime.Failpoint("coordinator.before_commit"); !s.ok()) return s;
  if (Status s = Commit(" (handoff)"); !s.ok()) return Fail(s);
  x_.progress().Committed(0);
  if (Status s = runtime.Failpoint("coordinator.after_commit"); !s.ok()) return s;
  Status finished = FinishCommitted();
  x_.progress().Ended();
  return finished;
}

Status Move::FinishCommitted() {
  transport::Runtime& runtime = x_.runtime();
  ShardMapPtr map = x_.committer().map();
  const cluster::BucketPlacement* placement = MovingBucket(*map, bucket_, move_);
  if (placement == nullptr) return OkStatus();  // finished already
  // The copies that leave: the source of a K = 1 move, the replaced backup of a replicated one
  // (none when a copy was added).
  const std::vector<NodeId> outgoing = placement->transition->Outgoing();
  const bool replicated = map->replication_factor() > 1;
  const storage::PointRange range = ToPointRange(placement->range);
  if (placement->transition->stage == TransitionStage::kCommitted) {
    auto cleanup = x_.committer().CommitEdit([&](const ShardMap&, ShardMapEdit* edit) {
      edit->AdvanceStage(bucket_, move_, TransitionStage::kCleanup);
      return OkStatus();
    });
    if (!cleanup.ok()) return cleanup.status();
    map = *cleanup;
  }
  // A crash here leaves kCleanup stored and the source's copy in place: recovery sends the drop.
  SHOAL_RETURN_IF_ERROR(runtime.Failpoint("coordinator.after_cleanup"));
  // Drop the leaving copy. A node that stays down keeps garbage it never serves (its map says
  // so); the move is finished anyway. A replaced backup is often one that went silent: one
  // attempt, so that the bucket's failover (which waits for a committed move) is not held up.
  for (NodeId node : outgoing) {
    auto dropped =
        x_.CallNode(node,
                    transport::DropBucketRequest{
                        .epoch = map->epoch(), .move = move_, .bucket = bucket_, .range = range},
                    replicated ? 1 : x_.options().call_attempts);
    if (!dropped.ok() && dropped.status().code() == StatusCode::kCancelled) {
      return dropped.status();
    }
  }
  SHOAL_RETURN_IF_ERROR(runtime.Failpoint("coordinator.before_done"));
  auto done = x_.committer().CommitEdit(
      [&](const ShardMap&, ShardMapEdit* edit) {
        edit->FinishTransition(bucket_, move_);
        return OkStatus();
      },
      MoveLogKey(move_), fmt::format("DONE {}", bucket_.DebugString()));
  if (!done.ok()) return done.status();
  x_.progress().Finished();
  return OkStatus();
}

Status Move::Abort(const Status& reason) {
  std::vector<NodeId> destination;
  storage::PointRange range;
  bool applies = false;
  auto aborted = x_.committer().CommitEdit(
      [&](const ShardMap& map, ShardMapEdit* edit) {
        const auto* placement = map.Find(bucket_);
        applies = placement != nullptr && placement->transition.has_value() &&
                  placement->transition->move == move_ &&
                  !cluster::IsCommitted(placement->transition->stage);
        if (applies) {
          edit->AbortTransition(bucket_, move_);
          destination = placement->transition->Incoming();
          range = ToPointRange(placement->range);
        }
        return OkStatus();
      },
      MoveLogKey(move_), fmt::format("ABORT {}: {}", bucket_.DebugString(), reason.ToString()));
  if (!aborted.ok()) {
    // Not stored (the metadata store is unreachable, say): the transition stays in the map, and
    // the balancer loop tries again (ResolveOrphans) once this task has ended.
    log::Warning("move.abort_failed", {{"move", move_.value()},
                                       {"bucket", bucket_.value()},
                                       {"reason", reason.ToString()},
                                       {"error", aborted.status().ToString()}});
    return aborted.status();
  }
  if (applies) {
    log::Warning(
        "move.abort",
        {{"move", move_.value()}, {"bucket", bucket_.value()}, {"reason", reason.ToString()}});
    x_.progress().Aborted(
        fmt::format("{} {}: {}", move_.DebugString(), bucket_.DebugString(), reason.ToString()));
  }
  // A crash or pause here leaves the ABORT stored and the drop unsent, or sent late (to a
  // destination that restarted meanwhile).
  SHOAL_RETURN_IF_ERROR(x_.runtime().Failpoint("coordinator.after_abort"));
  // The destination's staged data: best effort (it never serves it, and a new attempt drops the
  // range before ingesting). A copy the destination held from before the move stays
  // (kAbortedStaging): a repair that aborts must not cost the holder its resume.
  for (NodeId node : destination) {
    auto dropped =
        x_.CallNode(node,
                    transport::DropBucketRequest{.epoch = (*aborted)->epoch(),
                                                 .move = move_,
                                                 .bucket = bucket_,
                                                 .range = range,
                                                 .reason = transport::DropReason::kAbortedStaging},
                    1);
    if (!dropped.ok() && dropped.status().code() == StatusCode::kCancelled) {
      return dropped.status();
    }
  }
  return reason.ok() ? AbortedError("move aborted") : reason;
}

}  // namespace shoal::coordinator::internal
