// The move-protocol handlers of a storage node (docs/design/cluster.md, "Storage node"; paper 004
// §5): export and ingest of a bucket's snapshot, file fetch, catch-up from the source's change
// log, fence and drop. The invariants are in storage_node.h (FENCE, MOVE I/O OUTSIDE THE LOCK,
// FILE TRANSFER).

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "src/common/log.h"
#include "src/node/node_ranges.h"
#include "src/node/storage_node.h"
#include "src/storage/errors.h"

namespace shoal::node {

using cluster::BucketPlacement;
using cluster::TransitionStage;
using transport::Address;
using transport::Response;

namespace {

// Whether `store` holds a copy that vouches for its data (a stored position) of `bucket` or of
// a bucket of `map` overlapping `range` (ABORTED STAGING): dropping `range` would delete it.
bool HoldsVouchedCopy(const storage::BucketStore& store, const cluster::ShardMap& map,
                      BucketId bucket, const storage::PointRange& range) {
  if (store.GetReplicaState(bucket).position.rseq != 0) return true;
  for (const BucketPlacement& placement : map.buckets()) {
    if (Overlaps(placement.range, range) &&
        store.GetReplicaState(placement.id).position.rseq != 0) {
      return true;
    }
  }
  return false;
}

}  // namespace

StatusOr<const BucketPlacement*> StorageNode::MoveBucketLocked(BucketId bucket, MoveId move,
                                                               bool as_source) const {
  const BucketPlacement* placement = map_ == nullptr ? nullptr : map_->Find(bucket);
  if (placement == nullptr || !placement->transition.has_value() ||
      placement->transition->move != move) {
    return transport::MakeClusterError(
        transport::ClusterError::kStaleMove,
        fmt::format("n{}: {} of {} is not in flight at {}", options_.id.value(), move.DebugString(),
                    bucket.DebugString(), map_ ? map_->epoch().DebugString() : "no map"));
  }
  const auto& t = *placement->transition;
  if (!Contains(as_source ? t.source : t.destination, options_.id)) {
    return transport::MakeClusterError(
        transport::ClusterError::kStaleMove,
        fmt::format("n{} is not the {} of {}", options_.id.value(),
                    as_source ? "source" : "destination", move.DebugString()));
  }
  return placement;
}

Response StorageNode::HandleExport(const transport::ExportBucketRequest& request) {
  // The coordinator published the BEGIN map before this request; fetch it if it was lost.
  for (int attempt = 0; attempt < 2; ++attempt) {
    storage::PointRange range;
    std::string directory;
    {
      absl::MutexLock lock(&mu_);
      auto placement = MoveBucketLocked(request.bucket, request.move, /*as_source=*/true);
      if (placement.ok()) {
        range = ToPointRange((*placement)->range);
        directory = fmt::format("{}/moves/{}-{}", options_.data_dir, request.move.DebugString(),
                                ++export_counter_);
        auto& record = moves_[request.bucket];
        if (record.move != request.move) record = MoveRecord::New(request.move, /*source=*/true, 0);
      } else if (attempt == 1) {
        return Response::Error(placement.status());
      }
    }
    if (!directory.empty()) {
      // Outside mu_: exporting a large bucket takes long and serving goes on meanwhile.
      storage::ExportOptions export_options;
      export_options.directory = directory;
      StatusOr<storage::ExportedRange> exported = InternalError("export did not run");
      runtime_.RunAtLowerPriority(options_.background_nice,
                                  [&] { exported = store_->ExportRange(range, export_options); });
      if (!exported.ok()) return Response::Error(exported.status());
      if (Status s = exports_.Register(request.bucket, request.move, *exported); !s.ok()) {
        return Response::Error(s);
      }
      if (Status s = runtime_.Failpoint("source.after_export"); !s.ok()) {
        return Response::Error(s);
      }
      return Response::Ok(transport::ExportBucketResponse{.exported = std::move(*exported)});
    }
    if (Status s = RefreshMap(); !s.ok()) return Response::Error(s);
  }
  return Response::Error(InternalError("unreachable"));
}

StatusOr<BucketPlacement> StorageNode::ClaimForStaging(BucketId bucket, MoveId move,
                                                       const storage::PointRange* staged_range,
                                                       std::string_view what) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    {
      absl::MutexLock lock(&mu_);
      auto placement = MoveBucketLocked(bucket, move, /*as_source=*/false);
      if (placement.ok()) {
        if (RoleLocked(**placement) != LocalRole::kAdding) {
          return FailedPreconditionError(fmt::format("{} of a bucket that is served", what));
        }
        if (staged_range != nullptr && !(*staged_range == ToPointRange((*placement)->range))) {
          return InvalidArgumentError(
              fmt::format("{}: the staged range is not the bucket's", what));
        }
        if (move_io_[bucket] > 0) {
          return transport::MakeClusterError(
              transport::ClusterError::kNotServing,
              fmt::format("n{}: {} is being staged; retry", options_.id.value(),
                          bucket.DebugString()));
        }
        moves_.erase(bucket);
        ++move_io_[bucket];
        return **placement;
      }
      if (attempt == 1) return placement.status();
    }
    SHOAL_RETURN_IF_ERROR(RefreshMap());
  }
  return InternalError("unreachable");
}

void StorageNode::ReleaseStagingLocked(BucketId bucket) { --move_io_[bucket]; }

Response StorageNode::HandleIngest(const transport::IngestBucketRequest& request) {
  auto claimed = ClaimForStaging(request.bucket, request.move, &request.exported.range, "ingest");
  if (!claimed.ok()) return Response::Error(claimed.status());
  const storage::PointRange range = ToPointRange(claimed->range);
  const NodeId source = claimed->transition->source.front();
  // Entries kept from an earlier life as a replica of the bucket are not this copy's history:
  // the drain hands it the primary's.
  recent_.Forget(request.bucket);
  // Outside mu_ (MOVE I/O OUTSIDE THE LOCK): other buckets are served meanwhile. A copy held
  // from before stops vouching for the range first: the staging drops it (RESUMED COPY).
  Status staged = ForgetCopy(request.bucket);
  if (staged.ok()) {
    runtime_.RunAtLowerPriority(options_.background_nice,
                                [&] { staged = StageIngest(range, request, source); });
  }
  // Read before any catch-up can apply (none runs until the record below exists).
  const uint64_t churn = store_->LiveBytesChurn(range);
  {
    absl::MutexLock lock(&mu_);
    ReleaseStagingLocked(request.bucket);
    if (!staged.ok()) return Response::Error(staged);
    // The move may have ended while the files went in; its DropBucket waited for us.
    auto placement = MoveBucketLocked(request.bucket, request.move, /*as_source=*/false);
    if (!placement.ok()) return Response::Error(placement.status());
    moves_[request.bucket] =
        MoveRecord::New(request.move, /*source=*/false, request.exported.sequence);
    counters_.bytes_ingested += request.exported.bytes;
  }
  // The range holds exactly the export now (StageIngest dropped anything else first).
  SeedLoad(request.bucket, range, request.exported, churn);
  if (Status s = runtime_.Failpoint("destination.after_ingest"); !s.ok()) {
    return Response::Error(s);
  }
  return Response::Ok();
}

Status StorageNode::StageIngest(const storage::PointRange& range,
                                const transport::IngestBucketRequest& request, NodeId source) {
  const storage::ExportedRange& exported = request.exported;
  // Whatever an earlier, aborted attempt staged goes first.
  SHOAL_RETURN_IF_ERROR(store_->DropRange(range));
  storage::IngestOptions ingest;
  ingest.require_adding_buckets = false;
  bool local =
      options_.move_file_transfer == MoveFileTransfer::kAuto && runtime_.SharesFilesystem();
  for (const std::string& file : exported.files) {
    std::error_code ec;
    local = local && std::filesystem::is_regular_file(file, ec);
  }
  if (local || exported.files.empty()) {
    // Links to the source's files, which the engine moves into the store instead of copying
    // the bucket's data; where no link can be made, the engine copies the source's files.
    const std::string staging = StagingDirectory(options_.data_dir, request.move, request.bucket);
    auto linked = exported.files.empty() ? StatusOr<storage::ExportedRange>(exported)
                                         : LinkExportedFiles(exported, staging);
    ingest.move_files = linked.ok() && !exported.files.empty();
    const Status ingested = store_->IngestRange(linked.ok() ? *linked : exported, ingest);
    std::error_code ec;
    if (!exported.files.empty()) std::filesystem::remove_all(staging, ec);
    SHOAL_RETURN_IF_ERROR(ingested);
    absl::MutexLock lock(&mu_);
    counters_.move_files_read_locally += exported.files.size();
    if (ingest.move_files) counters_.move_files_linked += exported.files.size();
  } else {
    const std::string staging = StagingDirectory(options_.data_dir, request.move, request.bucket);
    FetchStats stats;
    auto copied =
        FetchExportedFiles(runtime_, source, request.move, request.bucket, exported, staging,
                           FetchOptions{.chunk_bytes = options_.move_chunk_bytes,
                                        .attempts = options_.move_chunk_attempts,
                                        .call_timeout = options_.call_timeout,
                                        .retry_pause = 10'000},
                           &stats);
    {
      absl::MutexLock lock(&mu_);
      counters_.move_files_fetched += stats.files;
      counters_.move_bytes_fetched += stats.bytes;
      counters_.move_chunk_retries += stats.retries;
    }
    if (!copied.ok()) return copied.status();
    // The copies are ours: the engine links them instead of copying them once more.
    ingest.move_files = true;
    const Status ingested = store_->IngestRange(*copied, ingest);
    std::error_code ec;
    std::filesystem::remove_all(staging, ec);
    SHOAL_RETURN_IF_ERROR(ingested);
  }
  return store_->ObserveVersion(exported.max_version);
}

Response StorageNode::HandleFetchMoveFile(const transport::FetchMoveFileRequest& request) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    {
      absl::MutexLock lock(&mu_);
      auto placement = MoveBucketLocked(request.bucket, request.move, /*as_source=*/true);
      if (placement.ok()) break;
      if (attempt == 1) return Response::Error(placement.status());
    }
    if (Status s = RefreshMap(); !s.ok()) return Response::Error(s);
  }
  // Outside mu_ (MOVE I/O OUTSIDE THE LOCK): a read of an export file.
  auto chunk = exports_.Read(request);
  if (!chunk.ok()) return Response::Error(chunk.status());
  return Response::Ok(std::move(*chunk));
}

Response StorageNode::HandleCatchUp(const transport::CatchUpRequest& request) {
  uint64_t position = request.after_sequence;
  uint64_t applied = 0;
  uint64_t applied_bytes = 0;
  transport::Micros read_micros = 0;
  transport::Micros apply_micros = 0;
  int idle_rounds = 0;
  bool copy_then_switch = false;
  // MOVE CPU: the drain to a fence's sequence runs at request priority (clients wait for it).
  const int nice = request.until_sequence.has_value() ? 0 : options_.background_nice;
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      auto placement = MoveBucketLocked(request.bucket, request.move, /*as_source=*/false);
      if (!placement.ok()) return Response::Error(placement.status());
      copy_then_switch = (*placement)->transition->mode == cluster::TransitionMode::kCopyThenSwitch;
      auto it = moves_.find(request.bucket);
      if ((it == moves_.end() || it->second.move != request.move) &&
          (*placement)->transition->mode == cluster::TransitionMode::kSwitchThenCopy) {
        // A switched destination has no ingest to wait for: it catches up with the source
        // before the commit (transition.h, kCatchUp).
        it = moves_
                 .insert_or_assign(request.bucket,
                                   MoveRecord::New(request.move, /*source=*/false, 0))
                 .first;
      }
      if (it == moves_.end() || it->second.move != request.move || it->second.source) {
        return Response::Error(transport::MakeClusterError(transport::ClusterError::kStaleMove,
                                                           "catch-up before ingest"));
      }
      position = std::max(position, it->second.applied_sequence);
    }
    if (request.until_sequence.has_value() && position >= *request.until_sequence) break;
    transport::ReadChangesRequest read{.move = request.move,
                                       .bucket = request.bucket,
                                       .after_sequence = position,
                                       .max_changes = 1000};
    StatusOr<Response> response = InternalError("read did not run");
    const transport::Micros read_start = runtime_.Now();
    runtime_.RunAtLowerPriority(nice, [&] {
      response = runtime_.Call(Address::Node(request.source), read, options_.call_timeout);
    });
    read_micros += runtime_.Now() - read_start;
    if (!response.ok()) return Response::Error(response.status());
    auto changes = transport::BodyAs<transport::ReadChangesResponse>(std::move(*response));
    if (!changes.ok()) return Response::Error(changes.status());
    auto move_live = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> MoveRecord* {
      auto placement = MoveBucketLocked(request.bucket, request.move, /*as_source=*/false);
      auto it = moves_.find(request.bucket);
      if (!placement.ok() || it == moves_.end() || it->second.move != request.move) return nullptr;
      return &it->second;
    };
    {
      absl::MutexLock lock(&mu_);
      if (move_live() == nullptr) {
        return Response::Error(transport::MakeClusterError(transport::ClusterError::kStaleMove,
                                                           "move ended during catch-up"));
      }
      ++move_io_[request.bucket];
    }
    // Outside mu_ (MOVE I/O OUTSIDE THE LOCK); apply-if-newer, so a concurrent retry of this
    // catch-up applying the same changes is harmless.
    Status applied_status = OkStatus();
    if (!changes->changes.empty()) {
      const transport::Micros apply_start = runtime_.Now();
      runtime_.RunAtLowerPriority(
          nice, [&] { applied_status = store_->ApplyChanges(changes->changes).status(); });
      apply_micros += runtime_.Now() - apply_start;
    }
    {
      absl::MutexLock lock(&mu_);
      --move_io_[request.bucket];
      if (!applied_status.ok()) return Response::Error(applied_status);
      MoveRecord* record = move_live();
      if (record == nullptr) {
        return Response::Error(transport::MakeClusterError(transport::ClusterError::kStaleMove,
                                                           "move ended during catch-up"));
      }
      record->applied_sequence = std::max(record->applied_sequence, changes->next_sequence);
      position = record->applied_sequence;
      counters_.changes_applied += changes->changes.size();
    }
    applied += changes->changes.size();
    for (const storage::Document& change : changes->changes) {
      applied_bytes += change.primary_key.size() + change.body.size();
    }
    if (Status s = runtime_.Failpoint("destination.after_apply"); !s.ok()) {
      return Response::Error(s);
    }
    const bool progressed = changes->next_sequence > read.after_sequence;
    if (request.until_sequence.has_value()) {
      if (position >= *request.until_sequence) break;
      if (!progressed) {
        if (++idle_rounds > 20) {
          return Response::Error(UnavailableError("catch-up makes no progress"));
        }
        if (Status s = runtime_.Sleep(1000); !s.ok()) return Response::Error(s);
      }
    } else if (changes->changes.size() < request.stop_below) {
      break;
    }
  }
  // The commit hands the bucket to this node after its catch-up. As at the ingest, a
  // destination at its free-space reserve takes no bucket: refusing here aborts the move, before
  // the fence or, after a drain, releasing the fenced source; a catch-up with nothing to apply
  // would otherwise not notice the full disk. A switched destination (switch-then-copy) serves
  // already and rolls forward.
  if (copy_then_switch) {
    if (Status s = store_->disk_space().Admit(0); !s.ok()) return Response::Error(s);
  }
  if (request.until_sequence.has_value()) {
    // A new copy of a replicated bucket holds everything up to the primary's fence: it takes
    // the primary's position and history (synced, which also makes the changes above durable),
    // so that the stream goes on from there once the commit lists it.
    if (request.replica.has_value()) {
      if (Status s = store_->SetReplicaState(request.bucket, *request.replica); !s.ok()) {
        return Response::Error(s);
      }
    }
    if (Status s = runtime_.Failpoint("destination.after_drain"); !s.ok()) {
      return Response::Error(s);
    }
  }
  return Response::Ok(transport::CatchUpResponse{.applied_sequence = position,
                                                 .applied = applied,
                                                 .applied_bytes = applied_bytes,
                                                 .read_micros = read_micros,
                                                 .apply_micros = apply_micros});
}

Status StorageNode::ForgetCopy(BucketId bucket) {
  const storage::ReplicaState state = store_->GetReplicaState(bucket);
  if (state.position.rseq == 0 && state.history.empty()) return OkStatus();
  return store_->SetReplicaState(bucket, storage::ReplicaState{});
}

Response StorageNode::HandleReadChanges(const transport::ReadChangesRequest& request) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::optional<storage::PointRange> range;
    {
      absl::MutexLock lock(&mu_);
      auto placement = MoveBucketLocked(request.bucket, request.move, /*as_source=*/true);
      if (placement.ok()) {
        range = ToPointRange((*placement)->range);
      } else if (attempt == 1) {
        return Response::Error(placement.status());
      }
    }
    if (range.has_value()) {
      // Outside mu_ (MOVE I/O OUTSIDE THE LOCK): a read of the log; the destination checks
      // again that the move is in flight before applying what it returns.
      auto batch = store_->ReadChangesSince(*range, request.after_sequence,
                                            std::max<uint32_t>(request.max_changes, 1));
      if (!batch.ok()) return Response::Error(batch.status());
      if (Status s = runtime_.Failpoint("source.after_read_changes"); !s.ok()) {
        return Response::Error(s);
      }
      return Response::Ok(transport::ReadChangesResponse{.changes = std::move(batch->changes),
                                                         .next_sequence = batch->next_sequence});
    }
    if (Status s = RefreshMap(); !s.ok()) return Response::Error(s);
  }
  return Response::Error(InternalError("unreachable"));
}

Response StorageNode::HandleFence(const transport::FenceRequest& request) {
  // The fence must be recorded against a map that holds the move (see the FENCE invariant).
  bool fenced = false;
  for (int attempt = 0; attempt < 2 && !fenced; ++attempt) {
    {
      absl::MutexLock lock(&mu_);
      auto placement = MoveBucketLocked(request.bucket, request.move, /*as_source=*/true);
      if (placement.ok()) {
        auto& record = moves_[request.bucket];
        if (record.move != request.move) record = MoveRecord::New(request.move, /*source=*/true, 0);
        record.fenced = true;
        // A fence of a switched move is its seal (a late copy of the kPrepare fence seals too:
        // that only makes the destination's writes wait for the commit).
        const auto& t = *(*placement)->transition;
        if (t.mode == cluster::TransitionMode::kSwitchThenCopy &&
            (t.stage == TransitionStage::kCopy || t.stage == TransitionStage::kCatchUp)) {
          record.sealed = true;
        }
        fenced = true;
        break;
      }
      if (attempt == 1) return Response::Error(placement.status());
    }
    if (Status s = RefreshMap(); !s.ok()) return Response::Error(s);
  }
  if (Status s = runtime_.Failpoint("source.after_fence"); !s.ok()) return Response::Error(s);
  // Writes (and reads) admitted before the fence finish before it reports the sequence.
  const transport::Micros start = runtime_.Now();
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      auto it = inflight_writes_.find(request.bucket);
      if (it == inflight_writes_.end() || it->second == 0) {
        transport::FenceResponse fence{.sequence = store_->LatestSequence(), .replica = {}};
        // A replicated primary also hands over its position and history: the new copy joins
        // its stream where the fence left it (docs/design/replication.md §6).
        const BucketPlacement* placement = map_ == nullptr ? nullptr : map_->Find(request.bucket);
        bool settled = true;
        if (placement != nullptr && ReplicatedPrimaryLocked(*placement)) {
          fence.replica = store_->GetReplicaState(request.bucket);
          // A handoff (§7): the new primary goes on from its own copy, so every backup holds
          // everything this primary ordered before the commit may name it.
          const uint64_t ordered = fence.replica->position.rseq;
          settled = !placement->transition.has_value() || placement->transition->KeepsPrimary() ||
                    replication_.Watermark(request.bucket) >= ordered;
          if (!settled && runtime_.Now() - start > options_.fence_timeout) {
            return Response::Error(UnavailableError(
                fmt::format("n{}: the backups of {} hold rseq {} of {} at the handoff's fence",
                            options_.id.value(), request.bucket.DebugString(),
                            replication_.Watermark(request.bucket), ordered)));
          }
        }
        if (settled) return Response::Ok(std::move(fence));
      }
    }
    if (Status s = runtime_.Sleep(options_.queue_poll); !s.ok()) return Response::Error(s);
  }
}

Response StorageNode::HandleDrop(const transport::DropBucketRequest& request) {
  if (epoch() < request.epoch) {
    if (Status s = RefreshMap(); !s.ok()) return Response::Error(s);
  }
  // Locked and unlocked by hand: the wait below releases mu_ while it sleeps.
  mu_.Lock();
  if (map_ == nullptr || map_->epoch() < request.epoch) {
    mu_.Unlock();
    return Response::Error(UnavailableError("map behind the drop's epoch"));
  }
  for (const BucketPlacement& bucket : map_->buckets()) {
    if (!Overlaps(bucket.range, request.range)) continue;
    const LocalRole role = RoleLocked(bucket);
    const bool committed_source =
        role == LocalRole::kLeaving && cluster::IsCommitted(bucket.transition->stage);
    if (role == LocalRole::kReadWrite || role == LocalRole::kAdding ||
        (role == LocalRole::kLeaving && !committed_source)) {
      Response refused = Response::Error(FailedPreconditionError(
          fmt::format("n{} still {} {} at {}", options_.id.value(), ToString(role),
                      bucket.id.DebugString(), map_->epoch().DebugString())));
      mu_.Unlock();
      return refused;
    }
  }
  // An ingest or apply of the ended move that passed its check before our map arrived finishes
  // first (MOVE I/O OUTSIDE THE LOCK); none can start now: the map no longer holds the move.
  while (move_io_[request.bucket] > 0) {
    mu_.Unlock();
    if (Status s = runtime_.Sleep(options_.queue_poll); !s.ok()) return Response::Error(s);
    mu_.Lock();
  }
  move_io_.erase(request.bucket);
  // Decided after the wait: a staging of the move that ran meanwhile cleared the state it
  // replaced, and none can start now.
  if (request.reason == transport::DropReason::kAbortedStaging &&
      HoldsVouchedCopy(*store_, *map_, request.bucket, request.range)) {
    if (auto record = moves_.find(request.bucket);
        record != moves_.end() && record->second.move == request.move) {
      moves_.erase(record);
    }
    mu_.Unlock();
    log::Info("node.drop_kept_copy", {{"node", options_.id.value()},
                                      {"bucket", request.bucket.value()},
                                      {"move", request.move.value()}});
    return Response::Ok();
  }
  // The copies whose data goes stop vouching for it first (RESUMED COPY).
  Status dropped = ForgetCopy(request.bucket);
  for (const BucketPlacement& bucket : map_->buckets()) {
    if (dropped.ok() && Overlaps(bucket.range, request.range)) dropped = ForgetCopy(bucket.id);
  }
  if (dropped.ok()) dropped = store_->DropRange(request.range);
  if (dropped.ok()) {
    moves_.erase(request.bucket);
    exports_.Forget(request.bucket);
  }
  mu_.Unlock();
  if (!dropped.ok()) return Response::Error(dropped);
  if (Status s = runtime_.Failpoint("source.after_drop"); !s.ok()) return Response::Error(s);
  ForgetLoad(request.bucket);
  // Export files of the move are no longer needed.
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(options_.data_dir + "/moves", ec)) {
    if (entry.path().filename().string().rfind(request.move.DebugString() + "-", 0) == 0) {
      std::filesystem::remove_all(entry.path(), ec);
    }
  }
  return Response::Ok();
}

}  // namespace shoal::node
