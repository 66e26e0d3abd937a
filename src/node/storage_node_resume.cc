// StorageNode: a returning copy of a replicated bucket resumed from its primary's log instead of
// rebuilt from a snapshot (docs/design/replication.md §4.3, §6 "Log retention = hinted handoff").
//
// RESUMED COPY. The destination of a copy move that still holds a copy of the bucket (a backup
// removed while its node was down, an old primary whose term a failover ended) asks the primary
// whether its log holds every write after that copy's position. The primary says yes only if
//   - the copy is a prefix of its history (storage::IsPrefixOf): never for a divergent copy, such
//     as an old primary's unacknowledged tail or a backup that got more than a failover's winner;
//   - its RseqIndex vouches for the position (storage/rseq_index.h): never after its own restart
//     (the index is in memory), nor for a copy older than the index (a range change clears it);
//   - its WAL from that sequence still exists (retention, storage.md §3).
// The copy's data then equals the primary's at that position, and the catch-up from the
// answered sequence applies every later write (apply-if-newer), so the copy ends equal to the
// primary at the fence as a snapshot would have. Before applying anything the destination clears
// its copy's state: from then on its data is a copy of nothing until the drain hands it the
// primary's state, so a catch-up that fails halfway (the primary failed over, the move aborted)
// is never taken for a copy again, and the next attempt ingests a snapshot.
//
// COPIES VOUCH FOR THEIR DATA. A node's stored state of a bucket says that its data of the
// bucket's range is the history up to that position. Every path that replaces, changes or
// deletes that data clears the state first: an ingest (StageIngest drops the range), a drop
// (HandleDrop), a resume (above) and the writes of a switch-then-copy destination
// (storage_node_switch.cc). So an aborted move's drop may keep a copy whose state has a position
// (ABORTED STAGING in storage_node.h): the move changed none of it.

#include <fmt/format.h>

#include "src/common/log.h"
#include "src/node/node_ranges.h"
#include "src/node/storage_node.h"

namespace shoal::node {

using cluster::BucketPlacement;
using transport::Address;
using transport::Response;
using transport::ResumeCopyResponse;

namespace {

Response Refused(std::string why, storage::ReplicaPosition position = {}) {
  return Response::Ok(ResumeCopyResponse{
      .sequence = std::nullopt, .refused = std::move(why), .position = position});
}

}  // namespace

Response StorageNode::HandleResumeCopy(const transport::ResumeCopyRequest& request) {
  // As an ingest: this node is the incoming copy of the move, and no ingest, catch-up or drop of
  // the bucket runs while it decides (move_io_, MOVE I/O OUTSIDE THE LOCK).
  if (auto claimed = ClaimForStaging(request.bucket, request.move, nullptr, "resume");
      !claimed.ok()) {
    return Response::Error(claimed.status());
  }
  auto release = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { ReleaseStagingLocked(request.bucket); };
  auto refuse = [&](std::string why, storage::ReplicaPosition position = {}) {
    absl::MutexLock lock(&mu_);
    release();
    return Refused(std::move(why), position);
  };

  if (request.store_id != store_->store_id()) {
    return refuse(fmt::format("the map binds store {:x}, this is {:x}", request.store_id,
                              store_->store_id()));
  }
  const storage::ReplicaState copy = store_->GetReplicaState(request.bucket);
  if (copy.position.rseq == 0) return refuse("no copy held");
  auto asked = runtime_.Call(
      Address::Node(request.source),
      transport::RetainedLogRequest{.move = request.move, .bucket = request.bucket, .copy = copy},
      options_.call_timeout);
  auto answer = asked.ok() ? transport::BodyAs<ResumeCopyResponse>(std::move(*asked))
                           : StatusOr<ResumeCopyResponse>(asked.status());
  if (!answer.ok()) {
    {
      absl::MutexLock lock(&mu_);
      release();
    }
    return Response::Error(answer.status());
  }
  if (!answer->sequence.has_value()) return refuse(answer->refused, copy.position);
  // The copy is one no longer: what the catch-up applies from here may be a failover's lost tail.
  recent_.Forget(request.bucket);
  if (Status s = store_->SetReplicaState(request.bucket, storage::ReplicaState{}); !s.ok()) {
    absl::MutexLock lock(&mu_);
    release();
    return Response::Error(s);
  }
  if (Status s = runtime_.Failpoint("destination.after_resume"); !s.ok()) {
    absl::MutexLock lock(&mu_);
    release();
    return Response::Error(s);
  }
  {
    absl::MutexLock lock(&mu_);
    release();
    // The move may have ended meanwhile; its DropBucket waited for us.
    auto placement = MoveBucketLocked(request.bucket, request.move, /*as_source=*/false);
    if (!placement.ok()) return Response::Error(placement.status());
    moves_[request.bucket] =
        MoveRecord::New(request.move, /*source=*/false, /*applied_sequence=*/*answer->sequence);
    ++counters_.copies_resumed;
  }
  log::Info("node.copy_resumed", {{"node", options_.id.value()},
                                  {"bucket", request.bucket.value()},
                                  {"move", request.move.value()},
                                  {"position", copy.position.DebugString()},
                                  {"after_sequence", *answer->sequence}});
  return Response::Ok(
      ResumeCopyResponse{.sequence = answer->sequence, .refused = {}, .position = copy.position});
}

Response StorageNode::HandleRetainedLog(const transport::RetainedLogRequest& request) {
  std::optional<storage::PointRange> range;
  for (int attempt = 0; attempt < 2 && !range.has_value(); ++attempt) {
    {
      absl::MutexLock lock(&mu_);
      auto placement = MoveBucketLocked(request.bucket, request.move, /*as_source=*/true);
      if (placement.ok()) {
        if (!ReplicatedPrimaryLocked(**placement)) {
          return Refused(fmt::format("n{} is not the replicated primary", options_.id.value()));
        }
        range = ToPointRange((*placement)->range);
        break;
      }
      if (attempt == 1) return Response::Error(placement.status());
    }
    if (Status s = RefreshMap(); !s.ok()) return Response::Error(s);
  }
  const storage::ReplicaState own = store_->GetReplicaState(request.bucket);
  if (!storage::IsPrefixOf(request.copy, own)) {
    return Refused(fmt::format("the copy {} is no prefix of the primary's {}",
                               request.copy.DebugString(), own.DebugString()));
  }
  const std::optional<uint64_t> start =
      store_->RetainedLogStart(request.bucket, request.copy.position.rseq);
  if (!start.has_value()) {
    return Refused(
        fmt::format("no log index covers rseq {} (the primary restarted, or the copy "
                    "is older than its index)",
                    request.copy.position.rseq));
  }
  // Outside mu_ (MOVE I/O OUTSIDE THE LOCK): the WAL from there must still be there.
  auto probe = store_->ReadChangesSince(*range, *start, 1);
  if (!probe.ok())
    return Refused(fmt::format("the log is not retained: {}", probe.status().ToString()));
  return Response::Ok(ResumeCopyResponse{.sequence = start, .refused = {}, .position = {}});
}

void StorageNode::ForgetRetainedLogsLocked(const cluster::ShardMap& before) {
  for (const BucketPlacement& bucket : map_->buckets()) {
    const BucketPlacement* was = before.Find(bucket.id);
    if (bucket.HasReplica(options_.id) && was != nullptr && was->range == bucket.range) continue;
    store_->ForgetRetainedLog(bucket.id);
  }
  // Ids the new map no longer has (merged away).
  for (const BucketPlacement& bucket : before.buckets()) {
    if (map_->Find(bucket.id) == nullptr) store_->ForgetRetainedLog(bucket.id);
  }
}

}  // namespace shoal::node
