// The move protocols run by the coordinator: BEGIN, copy-then-switch, switch-then-copy, the
// commit, cleanup and abort (ARCHITECTURE.md §3, docs/design/cluster.md). The durable records
// and the recovery rules are described in coordinator.h.

#include <fmt/format.h>

#include <algorithm>

#include "src/common/log.h"
#include "src/coordinator/coordinator.h"
#include "src/coordinator/coordinator_internal.h"

namespace shoal::coordinator {

using cluster::ShardMap;
using cluster::ShardMapEdit;
using cluster::ShardMapPtr;
using cluster::TransitionStage;
using internal::MoveLogKey;
using internal::ToPointRange;

namespace {

// The bucket's placement while `move` is in flight on it, else nullptr.
const cluster::BucketPlacement* MovingBucket(const ShardMap& map, BucketId bucket, MoveId move) {
  const cluster::BucketPlacement* placement = map.Find(bucket);
  if (placement == nullptr || !placement->transition.has_value() ||
      placement->transition->move != move) {
    return nullptr;
  }
  return placement;
}

}  // namespace

Status Coordinator::RunMove(BucketId bucket, NodeId destination, cluster::TransitionMode mode,
                            uint64_t planned_bytes) {
  // The destination must have checked in (the BEGIN below refuses a node that is no member).
  if (ShardMapPtr current = map(); current != nullptr && current->HasNode(destination)) {
    SHOAL_RETURN_IF_ERROR(CheckIn(destination));
  }
  // BEGIN.
  MoveId move;
  NodeId source;
  auto begun = CommitEdit(
      [&](const ShardMap& map, ShardMapEdit* edit) {
        const auto* placement = map.Find(bucket);
        if (placement == nullptr) return NotFoundError(bucket.DebugString());
        if (placement->transition.has_value()) {
          return FailedPreconditionError(fmt::format("{} is moving", bucket.DebugString()));
        }
        const auto* info = map.FindNode(destination);
        if (info == nullptr || info->state != cluster::NodeState::kActive) {
          return FailedPreconditionError(
              fmt::format("{} cannot receive buckets", destination.DebugString()));
        }
        if (placement->HasReplica(destination)) {
          return FailedPreconditionError(
              fmt::format("{} holds {} already", destination.DebugString(), bucket.DebugString()));
        }
        {
          std::lock_guard<std::mutex> lock(mu_);
          move = MoveId(next_move_);
        }
        source = placement->replicas.front();
        edit->BeginTransition(bucket, move, {destination}, mode);
        return OkStatus();
      },
      std::nullopt);
  if (!begun.ok()) return begun.status();
  {
    // The log record goes with the map in the next edits; BEGIN is written on its own here so
    // that the record exists even if nothing else is ever written.
    auto logged =
        store_.Put(MoveLogKey(move),
                   fmt::format("BEGIN {} {} -> {} {}", bucket.DebugString(), source.DebugString(),
                               destination.DebugString(), cluster::ToString(mode)),
                   metadata::kAnyVersion);
    if (!logged.ok()) return AbortMove(bucket, move, logged.status());
    log::Info("move.begin", {{"move", move.value()},
                             {"bucket", bucket.value()},
                             {"source", source.value()},
                             {"destination", destination.value()},
                             {"mode", cluster::ToString(mode)}});
    std::lock_guard<std::mutex> lock(mu_);
    ++progress_.started;
    ++progress_.in_flight;
    progress_.bytes_planned += planned_bytes;
  }
  SHOAL_RETURN_IF_ERROR(runtime_.Failpoint("coordinator.after_begin"));
  switch (mode) {
    case cluster::TransitionMode::kCopyThenSwitch:
      return CopyThenSwitch(bucket, move, source, destination, planned_bytes);
    case cluster::TransitionMode::kSwitchThenCopy:
      return SwitchThenCopy(bucket, move, source, destination);
  }
  return InternalError("unknown transition mode");
}

Status Coordinator::FailMove(BucketId bucket, MoveId move, const Status& status) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    --progress_.in_flight;
  }
  // Cancelled: this incarnation is gone; recovery decides.
  if (status.code() == StatusCode::kCancelled) return status;
  return AbortMove(bucket, move, status);
}

Status Coordinator::AdvanceStage(BucketId bucket, MoveId move, TransitionStage stage,
                                 std::optional<std::string> log) {
  auto edit = [&](const ShardMap&, ShardMapEdit* e) {
    e->AdvanceStage(bucket, move, stage);
    return OkStatus();
  };
  if (log.has_value()) return CommitEdit(edit, MoveLogKey(move), std::move(*log)).status();
  return CommitEdit(edit).status();
}

// Copy-then-switch (paper 004 §5, ARCHITECTURE.md §3): the source serves until the fenced commit.
void Coordinator::CorrectPlannedBytes(uint64_t planned_bytes, uint64_t actual_bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  // planned_bytes was added at BEGIN, so the subtraction cannot wrap.
  progress_.bytes_planned = progress_.bytes_planned - planned_bytes + actual_bytes;
}

Status Coordinator::CopyThenSwitch(BucketId bucket, MoveId move, NodeId source, NodeId destination,
                                   uint64_t planned_bytes) {
  auto fail = [&](const Status& status) { return FailMove(bucket, move, status); };
  // Snapshot: export at the source, ingest (invisibly) at the destination.
  auto exported_response =
      CallNode(source, transport::ExportBucketRequest{.move = move, .bucket = bucket},
               options_.call_attempts);
  if (!exported_response.ok()) return fail(exported_response.status());
  auto exported = transport::BodyAs<transport::ExportBucketResponse>(std::move(*exported_response));
  if (!exported.ok()) return fail(exported.status());
  CorrectPlannedBytes(planned_bytes, exported->exported.bytes);
  if (Status s = runtime_.Failpoint("coordinator.after_export"); !s.ok()) return s;
  const uint64_t rate = std::max<uint64_t>(options_.min_transfer_bytes_per_second, 1);
  const auto copy_time = static_cast<transport::Micros>(
      static_cast<double>(exported->exported.bytes) * 1e6 / static_cast<double>(rate));
  auto ingested = CallNode(destination,
                           transport::IngestBucketRequest{
                               .move = move, .bucket = bucket, .exported = exported->exported},
                           options_.call_attempts, options_.call_timeout + copy_time);
  if (!ingested.ok()) return fail(ingested.status());
  if (!ingested->status.ok()) return fail(ingested->status);
  {
    std::lock_guard<std::mutex> lock(mu_);
    progress_.bytes_copied += exported->exported.bytes;
  }
  if (Status s = runtime_.Failpoint("coordinator.after_ingest"); !s.ok()) return s;

  // Catch-up.
  auto advance = [&](TransitionStage stage) { return AdvanceStage(bucket, move, stage); };
  if (Status s = advance(TransitionStage::kCatchUp); !s.ok()) return fail(s);
  auto caught_up =
      CatchUpRounds(bucket, move, source, destination, exported->exported.sequence, std::nullopt);
  if (!caught_up.ok()) return fail(caught_up.status());
  const uint64_t position = *caught_up;

  // Prepare: durable first, so that a restarted source fences by its map alone.
  if (Status s = advance(TransitionStage::kPrepare); !s.ok()) return fail(s);
  if (Status s = runtime_.Failpoint("coordinator.before_fence"); !s.ok()) return s;
  const transport::Micros fence_start = runtime_.Now();
  auto fenced = CallNode(source, transport::FenceRequest{.move = move, .bucket = bucket},
                         options_.call_attempts);
  if (!fenced.ok()) return fail(fenced.status());
  auto fence = transport::BodyAs<transport::FenceResponse>(std::move(*fenced));
  if (!fence.ok()) return fail(fence.status());
  const transport::Micros drain_start = runtime_.Now();
  auto drained = CallNode(destination,
                          transport::CatchUpRequest{.move = move,
                                                    .bucket = bucket,
                                                    .source = source,
                                                    .after_sequence = position,
                                                    .until_sequence = fence->sequence,
                                                    .stop_below = 0},
                          options_.call_attempts);
  if (!drained.ok()) return fail(drained.status());
  if (!drained->status.ok()) return fail(drained->status);
  transport::CatchUpResponse drain_report;
  if (auto* body = std::get_if<transport::CatchUpResponse>(&drained->body)) drain_report = *body;
  if (Status s = runtime_.Failpoint("coordinator.before_commit"); !s.ok()) return s;

  // COMMIT: the map with the committed transition is the commit point.
  const transport::Micros commit_start = runtime_.Now();
  auto committed = CommitEdit(
      [&](const ShardMap&, ShardMapEdit* edit) {
        edit->CommitTransition(bucket, move);
        return OkStatus();
      },
      MoveLogKey(move),
      fmt::format("COMMIT {} {} -> {}", bucket.DebugString(), source.DebugString(),
                  destination.DebugString()));
  if (!committed.ok()) return fail(committed.status());
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++progress_.committed;
    progress_.bytes_moved += exported->exported.bytes;
    const transport::Micros now = runtime_.Now();
    progress_.fence_windows.push_back({.fence_call_micros = drain_start - fence_start,
                                       .drain_micros = commit_start - drain_start,
                                       .drain_read_micros = drain_report.read_micros,
                                       .drain_apply_micros = drain_report.apply_micros,
                                       .commit_micros = now - commit_start});
    progress_.first_commit_to.emplace(destination, now);
  }
  if (Status s = runtime_.Failpoint("coordinator.after_commit"); !s.ok()) return s;
  Status finished = FinishCommitted(bucket, move);
  {
    std::lock_guard<std::mutex> lock(mu_);
    --progress_.in_flight;
  }
  if (finished.ok() && options_.max_bytes_per_second > 0) {
    // Throttle: the next move of this task waits as long as this one's bytes take at the rate.
    const auto pause = static_cast<transport::Micros>(exported->exported.bytes * 1'000'000 /
                                                      options_.max_bytes_per_second);
    (void)runtime_.Sleep(pause);
  }
  return finished;
}

// Switch-then-copy (paper 002 §5.3-5.4, paper 001 §4.2): kPrepare (durable) -> the source
// fences and drains -> SWITCH (map: kCopy; the destination serves through the source) ->
// transfer -> SEAL (map: kCatchUp; the source fences the destination's writes) -> catch-up ->
// COMMIT -> cleanup. Aborts only before the switch; from the switch on it rolls
// forward, also after a coordinator restart (RollForwardSwitched).
Status Coordinator::SwitchThenCopy(BucketId bucket, MoveId move, NodeId source,
                                   NodeId destination) {
  auto fail = [&](const Status& status) { return FailMove(bucket, move, status); };
  // No switch toward a node that has not answered for this move: the destination takes the map
  // with the move in kPrepare (abortable) before the source is fenced.
  auto answered =
      CallNode(destination, transport::InstallMapRequest{.state = State()}, options_.call_attempts);
  if (!answered.ok()) return fail(answered.status());
  if (!answered->status.ok()) return fail(answered->status);
  // The map is in kPrepare since BEGIN, so a restarted source fences by its map alone.
  const transport::Micros fence_start = runtime_.Now();
  auto fenced = CallNode(source, transport::FenceRequest{.move = move, .bucket = bucket},
                         options_.call_attempts);
  if (!fenced.ok()) return fail(fenced.status());
  auto fence = transport::BodyAs<transport::FenceResponse>(std::move(*fenced));
  if (!fence.ok()) return fail(fence.status());
  if (Status s = runtime_.Failpoint("coordinator.before_switch"); !s.ok()) return s;
  const transport::Micros switch_start = runtime_.Now();
  if (Status s = AdvanceStage(bucket, move, TransitionStage::kCopy,
                              fmt::format("SWITCH {} {} -> {}", bucket.DebugString(),
                                          source.DebugString(), destination.DebugString()));
      !s.ok()) {
    return fail(s);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    const transport::Micros now = runtime_.Now();
    progress_.fence_windows.push_back({.fence_call_micros = switch_start - fence_start,
                                       .drain_micros = 0,
                                       .drain_read_micros = 0,
                                       .drain_apply_micros = 0,
                                       .commit_micros = now - switch_start});
    progress_.first_commit_to.emplace(destination, now);
  }
  // Every write the source takes from here on is one the destination forwarded, so its change
  // log after the fence's sequence holds them all.
  Status finished = RollForwardSwitched(bucket, move, fence->sequence);
  std::lock_guard<std::mutex> lock(mu_);
  --progress_.in_flight;
  return finished;
}

StatusOr<Coordinator::TransferOutcome> Coordinator::TransferSwitched(BucketId bucket, MoveId move,
                                                                     NodeId source,
                                                                     NodeId destination,
                                                                     TransitionStage stage,
                                                                     uint64_t* bytes) {
  // A node that does not answer is waited for (retries with backoff): the source as long as it
  // takes, since only it holds the whole bucket; the destination until it is down, and then
  // the move goes back to the source.
  std::string cursor;
  int failures = 0;
  while (true) {
    auto transferred = CallNode(
        destination,
        transport::TransferBucketRequest{
            .move = move, .bucket = bucket, .source = source, .cursor = cursor, .max_pages = 16},
        options_.call_attempts);
    Status status = transferred.ok() ? transferred->status : transferred.status();
    if (status.code() == StatusCode::kCancelled) return status;
    if (!status.ok()) {
      const cluster::BucketPlacement* now = MovingBucket(*this->map(), bucket, move);
      if (now == nullptr || now->transition->stage != stage) return TransferOutcome::kNotOurs;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (IsDown(destination)) return TransferOutcome::kDestinationLost;
      }
      SHOAL_RETURN_IF_ERROR(runtime_.Sleep(options_.retry_backoff << std::min(failures++, 6)));
      continue;
    }
    auto body = transport::BodyAs<transport::TransferBucketResponse>(std::move(*transferred));
    if (!body.ok()) return body.status();  // a malformed answer: a bug, not a state to wait out
    failures = 0;
    *bytes += body->bytes;
    cursor = body->next_cursor;
    {
      std::lock_guard<std::mutex> lock(mu_);
      progress_.bytes_copied += body->bytes;
    }
    if (cursor.empty()) return TransferOutcome::kDone;
  }
}

Status Coordinator::RollBackSwitched(BucketId bucket, MoveId move, NodeId destination) {
  return AbortMove(
      bucket, move,
      UnavailableError(fmt::format("the destination {} is down (no heartbeat for {} ms); {} goes "
                                   "back to its source",
                                   destination.DebugString(), options_.node_timeout / 1000,
                                   bucket.DebugString())));
}

StatusOr<uint64_t> Coordinator::SealSource(BucketId bucket, MoveId move, NodeId source) {
  int failures = 0;
  while (true) {
    auto fenced = CallNode(source, transport::FenceRequest{.move = move, .bucket = bucket},
                           options_.call_attempts);
    Status status = fenced.ok() ? fenced->status : fenced.status();
    if (status.code() == StatusCode::kCancelled) return status;
    if (status.ok()) {
      auto body = transport::BodyAs<transport::FenceResponse>(std::move(*fenced));
      if (!body.ok()) return body.status();
      return body->sequence;
    }
    const cluster::BucketPlacement* now = MovingBucket(*this->map(), bucket, move);
    if (now == nullptr || now->transition->stage != TransitionStage::kCatchUp) {
      return AbortedError("the move is no longer sealed");
    }
    SHOAL_RETURN_IF_ERROR(runtime_.Sleep(options_.retry_backoff << std::min(failures++, 6)));
  }
}

StatusOr<uint64_t> Coordinator::CatchUpRounds(BucketId bucket, MoveId move, NodeId source,
                                              NodeId destination, uint64_t after_sequence,
                                              std::optional<uint64_t> until_sequence) {
  uint64_t position = after_sequence;
  for (uint32_t round = 0; round < options_.catch_up_rounds; ++round) {
    SHOAL_ASSIGN_OR_RETURN(transport::Response caught,
                           CallNode(destination,
                                    transport::CatchUpRequest{.move = move,
                                                              .bucket = bucket,
                                                              .source = source,
                                                              .after_sequence = position,
                                                              .until_sequence = until_sequence,
                                                              .stop_below = options_.fence_backlog},
                                    options_.call_attempts));
    SHOAL_ASSIGN_OR_RETURN(auto body,
                           transport::BodyAs<transport::CatchUpResponse>(std::move(caught)));
    position = body.applied_sequence;
    if (until_sequence.has_value() || body.applied < options_.fence_backlog) break;
  }
  return position;
}

Status Coordinator::RollForwardSwitched(BucketId bucket, MoveId move,
                                        std::optional<uint64_t> switch_sequence) {
  if (Status s = runtime_.Failpoint("coordinator.after_switch"); !s.ok()) return s;
  ShardMapPtr map = this->map();
  const cluster::BucketPlacement* placement = MovingBucket(*map, bucket, move);
  if (placement == nullptr) return OkStatus();  // finished already
  const NodeId source = placement->transition->source.front();
  const NodeId destination = placement->transition->destination.front();
  uint64_t bytes = 0;
  // Where the source's change log holds every write the destination may lack (see below);
  // unknown after a coordinator restart.
  std::optional<uint64_t> caught_up_to = switch_sequence;
  // A whole transfer in `stage`: nullopt to go on, else what the roll-forward returns.
  auto transfer = [&](TransitionStage stage) -> std::optional<Status> {
    auto outcome = TransferSwitched(bucket, move, source, destination, stage, &bytes);
    if (!outcome.ok()) return outcome.status();
    switch (*outcome) {
      case TransferOutcome::kDone:
        return std::nullopt;
      case TransferOutcome::kNotOurs:
        return OkStatus();
      case TransferOutcome::kDestinationLost:
        return RollBackSwitched(bucket, move, destination);
    }
    return std::nullopt;
  };
  if (placement->transition->stage == TransitionStage::kCopy) {
    // Transfer until the destination holds the whole bucket as of each page.
    if (auto end = transfer(TransitionStage::kCopy); end.has_value()) return *end;
    // While the source still takes forwarded writes: most of the log, so that the sealed
    // window below is short.
    if (caught_up_to.has_value()) {
      auto caught = CatchUpRounds(bucket, move, source, destination, *caught_up_to, std::nullopt);
      caught_up_to = caught.ok() ? std::optional<uint64_t>(*caught) : std::nullopt;
    }
    // SEAL (durable first, so that a restarted source refuses forwarded writes by its map).
    if (Status s = AdvanceStage(bucket, move, TransitionStage::kCatchUp,
                                fmt::format("SEAL {} {} -> {}", bucket.DebugString(),
                                            source.DebugString(), destination.DebugString()));
        !s.ok()) {
      return s;
    }
  } else if (placement->transition->stage != TransitionStage::kCatchUp) {
    return OkStatus();  // not switched: not ours to roll forward
  }
  if (Status s = runtime_.Failpoint("coordinator.after_seal"); !s.ok()) return s;
  // A write the destination forwarded may take effect at the source after the transfer read
  // its key (its reply was lost, or the destination crashed meanwhile), and nobody may have
  // read it since. Once the source is sealed and drained, its copy of the bucket no longer
  // changes: catching up with its change log since the switch, or one more full transfer when
  // that log is unknown or gone, leaves the destination with every write that took effect.
  auto sealed_at = SealSource(bucket, move, source);
  if (!sealed_at.ok()) {
    return sealed_at.status().code() == StatusCode::kAborted ? OkStatus() : sealed_at.status();
  }
  if (caught_up_to.has_value()) {
    auto caught = CatchUpRounds(bucket, move, source, destination, *caught_up_to, *sealed_at);
    caught_up_to = caught.ok() ? std::optional<uint64_t>(*caught) : std::nullopt;
  }
  if (!caught_up_to.has_value()) {
    if (auto end = transfer(TransitionStage::kCatchUp); end.has_value()) return *end;
  }
  if (Status s = runtime_.Failpoint("coordinator.before_commit"); !s.ok()) return s;
  auto committed = CommitEdit(
      [&](const ShardMap& current, ShardMapEdit* edit) {
        const auto* b = current.Find(bucket);
        if (b != nullptr && b->transition.has_value() && b->transition->move == move &&
            b->transition->stage == TransitionStage::kCatchUp) {
          edit->CommitTransition(bucket, move);
        }
        return OkStatus();
      },
      MoveLogKey(move),
      fmt::format("COMMIT {} {} -> {}", bucket.DebugString(), source.DebugString(),
                  destination.DebugString()));
  if (!committed.ok()) return committed.status();
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++progress_.committed;
    progress_.bytes_moved += bytes;
  }
  if (Status s = runtime_.Failpoint("coordinator.after_commit"); !s.ok()) return s;
  return FinishCommitted(bucket, move);
}

Status Coordinator::FinishCommitted(BucketId bucket, MoveId move) {
  ShardMapPtr map = this->map();
  const cluster::BucketPlacement* placement = MovingBucket(*map, bucket, move);
  if (placement == nullptr) return OkStatus();  // finished already
  const NodeId source = placement->transition->source.front();
  const storage::PointRange range = ToPointRange(placement->range);
  if (placement->transition->stage == TransitionStage::kCommitted) {
    auto cleanup = CommitEdit([&](const ShardMap&, ShardMapEdit* edit) {
      edit->AdvanceStage(bucket, move, TransitionStage::kCleanup);
      return OkStatus();
    });
    if (!cleanup.ok()) return cleanup.status();
    map = *cleanup;
  }
  // A crash here leaves kCleanup stored and the source's copy in place: recovery sends the drop.
  SHOAL_RETURN_IF_ERROR(runtime_.Failpoint("coordinator.after_cleanup"));
  // Drop the source's copy. A source that stays down keeps garbage it never serves (its map
  // says so); the move is finished anyway.
  auto dropped =
      CallNode(source,
               transport::DropBucketRequest{
                   .epoch = map->epoch(), .move = move, .bucket = bucket, .range = range},
               options_.call_attempts);
  if (!dropped.ok() && dropped.status().code() == StatusCode::kCancelled) return dropped.status();
  SHOAL_RETURN_IF_ERROR(runtime_.Failpoint("coordinator.before_done"));
  auto done = CommitEdit(
      [&](const ShardMap&, ShardMapEdit* edit) {
        edit->FinishTransition(bucket, move);
        return OkStatus();
      },
      MoveLogKey(move), fmt::format("DONE {}", bucket.DebugString()));
  if (!done.ok()) return done.status();
  std::lock_guard<std::mutex> lock(mu_);
  ++progress_.finished;
  return OkStatus();
}

Status Coordinator::AbortMove(BucketId bucket, MoveId move, const Status& reason) {
  std::vector<NodeId> destination;
  storage::PointRange range;
  bool applies = false;
  auto aborted = CommitEdit(
      [&](const ShardMap& map, ShardMapEdit* edit) {
        const auto* placement = map.Find(bucket);
        applies = placement != nullptr && placement->transition.has_value() &&
                  placement->transition->move == move &&
                  !cluster::IsCommitted(placement->transition->stage);
        if (applies) {
          edit->AbortTransition(bucket, move);
          destination = placement->transition->Incoming();
          range = ToPointRange(placement->range);
        }
        return OkStatus();
      },
      MoveLogKey(move), fmt::format("ABORT {}: {}", bucket.DebugString(), reason.ToString()));
  if (!aborted.ok()) {
    // Not stored (the metadata store is unreachable, say): the transition stays in the map, and
    // the balancer loop tries again (ResolveOrphans) once this task has ended.
    log::Warning("move.abort_failed", {{"move", move.value()},
                                       {"bucket", bucket.value()},
                                       {"reason", reason.ToString()},
                                       {"error", aborted.status().ToString()}});
    return aborted.status();
  }
  if (applies) {
    log::Warning(
        "move.abort",
        {{"move", move.value()}, {"bucket", bucket.value()}, {"reason", reason.ToString()}});
    std::lock_guard<std::mutex> lock(mu_);
    ++progress_.aborted;
    progress_.abort_reasons.push_back(
        fmt::format("{} {}: {}", move.DebugString(), bucket.DebugString(), reason.ToString()));
    if (progress_.abort_reasons.size() > 16) {
      progress_.abort_reasons.erase(progress_.abort_reasons.begin());
    }
  }
  // The destination's staged data: best effort (it never serves it, and a new attempt drops the
  // range before ingesting).
  for (NodeId node : destination) {
    auto dropped =
        CallNode(node,
                 transport::DropBucketRequest{
                     .epoch = (*aborted)->epoch(), .move = move, .bucket = bucket, .range = range},
                 1);
    if (!dropped.ok() && dropped.status().code() == StatusCode::kCancelled) {
      return dropped.status();
    }
  }
  return reason.ok() ? AbortedError("move aborted") : reason;
}

}  // namespace shoal::coordinator
