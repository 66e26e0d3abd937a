// Switch-then-copy (paper 002 §5.3-5.4, paper 001 §4.2): kPrepare (durable) -> the destination
// takes that map -> the source fences and drains -> SWITCH (map: kCopy; the destination serves
// through the source) -> transfer -> SEAL (map: kCatchUp; the source fences the destination's
// writes) -> catch-up -> COMMIT -> cleanup. Aborts only before the switch; from the switch on
// it rolls forward, also after a coordinator restart, unless the destination is lost.

#include <fmt/format.h>

#include <algorithm>

#include "src/coordinator/coordinator_internal.h"
#include "src/coordinator/move.h"

namespace shoal::coordinator::internal {

using cluster::ShardMap;
using cluster::ShardMapEdit;
using cluster::ShardMapPtr;
using cluster::TransitionStage;

Status Move::SwitchThenCopy() {
  transport::Runtime& runtime = x_.runtime();
  const CoordinatorOptions& options = x_.options();
  auto fail = [&](const Status& status) { return Fail(status); };
  // No switch toward a node that has not answered for this move: the destination takes the map
  // with the move in kPrepare (abortable) before the source is fenced.
  auto answered =
      x_.CallNode(destination_, transport::InstallMapRequest{.state = x_.committer().State()},
                  options.call_attempts);
  if (!answered.ok()) return fail(answered.status());
  if (!answered->status.ok()) return fail(answered->status);
  // The map is in kPrepare since BEGIN, so a restarted source fences by its map alone.
  const transport::Micros fence_start = runtime.Now();
  auto fenced = x_.CallNode(source_, transport::FenceRequest{.move = move_, .bucket = bucket_},
                            options.call_attempts);
  if (!fenced.ok()) return fail(fenced.status());
  auto fence = transport::BodyAs<transport::FenceResponse>(std::move(*fenced));
  if (!fence.ok()) return fail(fence.status());
  if (Status s = runtime.Failpoint("coordinator.before_switch"); !s.ok()) return s;
  const transport::Micros switch_start = runtime.Now();
  if (Status s = AdvanceStage(TransitionStage::kCopy, fmt::format("SWITCH {}", Route())); !s.ok()) {
    return fail(s);
  }
  const transport::Micros now = runtime.Now();
  x_.progress().FenceWindowEnded({.fence_call_micros = switch_start - fence_start,
                                  .drain_micros = 0,
                                  .drain_read_micros = 0,
                                  .drain_apply_micros = 0,
                                  .commit_micros = now - switch_start},
                                 destination_, now);
  // Every write the source takes from here on is one the destination forwarded, so its change
  // log after the fence's sequence holds them all.
  Status finished = RollForwardSwitched(fence->sequence);
  x_.progress().Ended();
  return finished;
}

StatusOr<Move::TransferOutcome> Move::TransferSwitched(TransitionStage stage, uint64_t* bytes) {
  const CoordinatorOptions& options = x_.options();
  std::string cursor;
  int failures = 0;
  while (true) {
    auto transferred = x_.CallNode(
        destination_,
        transport::TransferBucketRequest{
            .move = move_, .bucket = bucket_, .source = source_, .cursor = cursor, .max_pages = 16},
        options.call_attempts);
    Status status = transferred.ok() ? transferred->status : transferred.status();
    if (status.code() == StatusCode::kCancelled) return status;
    if (!status.ok()) {
      const cluster::BucketPlacement* now = MovingBucket(*x_.committer().map(), bucket_, move_);
      if (now == nullptr || now->transition->stage != stage) return TransferOutcome::kNotOurs;
      if (x_.membership().IsDown(destination_)) return TransferOutcome::kDestinationLost;
      SHOAL_RETURN_IF_ERROR(x_.runtime().Sleep(options.retry_backoff << std::min(failures++, 6)));
      continue;
    }
    auto body = transport::BodyAs<transport::TransferBucketResponse>(std::move(*transferred));
    if (!body.ok()) return body.status();  // a malformed answer: a bug, not a state to wait out
    failures = 0;
    *bytes += body->bytes;
    cursor = body->next_cursor;
    x_.progress().Copied(body->bytes);
    if (cursor.empty()) return TransferOutcome::kDone;
  }
}

std::optional<Status> Move::TransferOrEnd(TransitionStage stage, uint64_t* bytes) {
  auto outcome = TransferSwitched(stage, bytes);
  if (!outcome.ok()) return outcome.status();
  switch (*outcome) {
    case TransferOutcome::kDone:
      return std::nullopt;
    case TransferOutcome::kNotOurs:
      return OkStatus();
    case TransferOutcome::kDestinationLost:
      return RollBackSwitched();
  }
  return std::nullopt;
}

Status Move::RollBackSwitched() {
  return Abort(UnavailableError(fmt::format(
      "the destination {} is down (no heartbeat for {} ms); {} goes back to its "
      "source",
      destination_.DebugString(), x_.options().node_timeout / 1000, bucket_.DebugString())));
}

StatusOr<uint64_t> Move::SealSource() {
  int failures = 0;
  while (true) {
    auto fenced = x_.CallNode(source_, transport::FenceRequest{.move = move_, .bucket = bucket_},
                              x_.options().call_attempts);
    Status status = fenced.ok() ? fenced->status : fenced.status();
    if (status.code() == StatusCode::kCancelled) return status;
    if (status.ok()) {
      auto body = transport::BodyAs<transport::FenceResponse>(std::move(*fenced));
      if (!body.ok()) return body.status();
      return body->sequence;
    }
    const cluster::BucketPlacement* now = MovingBucket(*x_.committer().map(), bucket_, move_);
    if (now == nullptr || now->transition->stage != TransitionStage::kCatchUp) {
      return AbortedError("the move is no longer sealed");
    }
    SHOAL_RETURN_IF_ERROR(
        x_.runtime().Sleep(x_.options().retry_backoff << std::min(failures++, 6)));
  }
}

Status Move::RollForwardSwitched(std::optional<uint64_t> switch_sequence) {
  transport::Runtime& runtime = x_.runtime();
  if (Status s = runtime.Failpoint("coordinator.after_switch"); !s.ok()) return s;
  ShardMapPtr map = x_.committer().map();
  const cluster::BucketPlacement* placement = MovingBucket(*map, bucket_, move_);
  if (placement == nullptr) return OkStatus();  // finished already
  uint64_t bytes = 0;
  // Where the source's change log holds every write the destination may lack (see below);
  // unknown after a coordinator restart.
  std::optional<uint64_t> caught_up_to = switch_sequence;
  if (placement->transition->stage == TransitionStage::kCopy) {
    // Transfer until the destination holds the whole bucket as of each page.
    if (auto end = TransferOrEnd(TransitionStage::kCopy, &bytes); end.has_value()) return *end;
    // While the source still takes forwarded writes: most of the log, so that the sealed
    // window below is short.
    if (caught_up_to.has_value()) {
      auto caught = CatchUpRounds(*caught_up_to, std::nullopt);
      caught_up_to = caught.ok() ? std::optional<uint64_t>(*caught) : std::nullopt;
    }
    // SEAL (durable first, so that a restarted source refuses forwarded writes by its map).
    if (Status s = AdvanceStage(TransitionStage::kCatchUp, fmt::format("SEAL {}", Route()));
        !s.ok()) {
      return s;
    }
  } else if (placement->transition->stage != TransitionStage::kCatchUp) {
    return OkStatus();  // not switched: not ours to roll forward
  }
  if (Status s = runtime.Failpoint("coordinator.after_seal"); !s.ok()) return s;
  // A write the destination forwarded may take effect at the source after the transfer read
  // its key (its reply was lost, or the destination crashed meanwhile), and nobody may have
  // read it since. Once the source is sealed and drained, its copy of the bucket no longer
  // changes: catching up with its change log since the switch, or one more full transfer when
  // that log is unknown or gone, leaves the destination with every write that took effect.
  auto sealed_at = SealSource();
  if (!sealed_at.ok()) {
    return sealed_at.status().code() == StatusCode::kAborted ? OkStatus() : sealed_at.status();
  }
  if (caught_up_to.has_value()) {
    auto caught = CatchUpRounds(*caught_up_to, *sealed_at);
    caught_up_to = caught.ok() ? std::optional<uint64_t>(*caught) : std::nullopt;
  }
  if (!caught_up_to.has_value()) {
    if (auto end = TransferOrEnd(TransitionStage::kCatchUp, &bytes); end.has_value()) return *end;
  }
  if (Status s = runtime.Failpoint("coordinator.before_commit"); !s.ok()) return s;
  auto committed = x_.committer().CommitEdit(
      [&](const ShardMap& current, ShardMapEdit* edit) {
        const auto* b = current.Find(bucket_);
        if (b != nullptr && b->transition.has_value() && b->transition->move == move_ &&
            b->transition->stage == TransitionStage::kCatchUp) {
          edit->CommitTransition(bucket_, move_);
        }
        return OkStatus();
      },
      MoveLogKey(move_), fmt::format("COMMIT {}", Route()));
  if (!committed.ok()) return committed.status();
  x_.progress().Committed(bytes);
  if (Status s = runtime.Failpoint("coordinator.after_commit"); !s.ok()) return s;
  return FinishCommitted();
}

}  // namespace shoal::coordinator::internal
