// StorageNode: replication of a bucket's writes from its primary to its backups
// (storage_node.h, REPLICATION; docs/design/replication.md §3).
//
// At the primary: ReplicatedWrite orders a write in the store (ApplyEachStamped, deferred
// sync), hands the entry to Send, which releases entries to the backups' streams in rseq order,
// syncs the local WAL and waits for the ReplicationLog to commit or abandon the write. One
// sender task per backup drains that backup's stream, one message at a time, and feeds the
// backup's acknowledged positions back to the log.
//
// At a backup: HandleReplicate applies the entries of each bucket whose primary and term match
// its own map (BucketStore::ApplyReplicated), syncs once, and answers each bucket's position.

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <utility>

#include "src/node/storage_node.h"
#include "src/node/write_mutation.h"
#include "src/storage/errors.h"

namespace shoal::node {

using cluster::BucketPlacement;
using transport::Address;
using transport::Response;

namespace {

std::string NodeNames(const std::vector<NodeId>& nodes) {
  std::string out;
  for (NodeId node : nodes) out += (out.empty() ? "" : ",") + node.DebugString();
  return out;
}

bool IsReplicatedPrimary(const BucketPlacement& bucket, NodeId self) {
  return !bucket.transition.has_value() && bucket.replicas.size() > 1 &&
         bucket.replicas.front() == self;
}

}  // namespace

void StorageNode::ConfigureReplicationLocked() {
  const NodeId self = options_.id;
  std::vector<NodeId> senders;
  absl::MutexLock outbox_lock(&outbox_mu_);
  // Buckets no longer replicated from here: their uncommitted writes are abandoned.
  for (auto it = outboxes_.begin(); it != outboxes_.end();) {
    const BucketPlacement* placement = map_->Find(it->first);
    if (placement != nullptr && IsReplicatedPrimary(*placement, self)) {
      ++it;
      continue;
    }
    for (NodeId backup : it->second.backups) {
      if (auto stream = streams_.find(backup); stream != streams_.end()) {
        stream->second->DropBucket(it->first);
      }
    }
    replication_.Abandon(it->first);
    replication_.Forget(it->first);
    outboxes_.erase(it++);
  }
  for (const BucketPlacement& bucket : map_->buckets()) {
    if (!IsReplicatedPrimary(bucket, self)) continue;
    const std::vector<NodeId> backups(bucket.replicas.begin() + 1, bucket.replicas.end());
    const uint64_t held = store_->GetReplicaState(bucket.id).position.rseq;
    auto [it, added] = outboxes_.try_emplace(bucket.id);
    Outbox& outbox = it->second;
    if (added) outbox.next = held + 1;
    for (NodeId old : outbox.backups) {
      if (std::find(backups.begin(), backups.end(), old) != backups.end()) continue;
      if (auto stream = streams_.find(old); stream != streams_.end()) {
        stream->second->DropBucket(bucket.id);
      }
    }
    outbox.backups = backups;
    outbox.queues.clear();
    for (NodeId backup : backups) {
      std::shared_ptr<ReplicaStreamQueue>& stream = streams_[backup];
      if (stream == nullptr) {
        stream = std::make_shared<ReplicaStreamQueue>();
        senders.push_back(backup);
      }
      outbox.queues.push_back(stream);
    }
    // A backup that joins holds what the primary held when it joined (a move's commit).
    replication_.Configure(bucket.id, backups, held, held);
  }
  for (NodeId backup : senders) {
    runtime_.Spawn(Address::Node(self),
                   fmt::format("n{}.replicate-to-n{}", self.value(), backup.value()),
                   [node = shared_from_this(), backup, queue = streams_[backup]] {
                     node->ReplicaSenderLoop(backup, queue);
                   });
  }
}

Status StorageNode::EnsureTerm(BucketId bucket) {
  Term term(0);
  {
    absl::MutexLock lock(&mu_);
    const BucketPlacement* placement = map_ == nullptr ? nullptr : map_->Find(bucket);
    if (placement == nullptr) return InternalError("a replicated bucket without a placement");
    term = placement->term;
  }
  if (store_->GetReplicaState(bucket).current_term() >= term) return OkStatus();
  Status begun = store_->BeginTerm(bucket, term);
  // Another writer began it meanwhile.
  if (!begun.ok() && store_->GetReplicaState(bucket).current_term() >= term) return OkStatus();
  return begun;
}

void StorageNode::Send(storage::ReplicatedEntry entry) {
  absl::MutexLock lock(&outbox_mu_);
  auto it = outboxes_.find(entry.bucket);
  if (it == outboxes_.end()) return;  // no longer the primary: the write is abandoned
  Outbox& outbox = it->second;
  if (entry.position.rseq < outbox.next) return;
  outbox.waiting.emplace(entry.position.rseq, std::move(entry));
  while (!outbox.waiting.empty() && outbox.waiting.begin()->first == outbox.next) {
    for (const auto& queue : outbox.queues) queue->Push(outbox.waiting.begin()->second);
    outbox.waiting.erase(outbox.waiting.begin());
    ++outbox.next;
  }
}

Response StorageNode::ReplicatedWrite(const transport::WriteRequest& request, BucketId bucket) {
  if (Status s = EnsureTerm(bucket); !s.ok()) {
    Release(bucket, /*write=*/true);
    return Response::Error(s);
  }
  const storage::Mutation mutation = MutationOf(request);
  StatusOr<storage::BucketStore::StampedWrite> stamped =
      store_->ApplyEachStamped(bucket, std::span(&mutation, 1), storage::WalSync::kDeferred);
  if (!stamped.ok() || !stamped->results[0].ok()) {
    Release(bucket, /*write=*/true);
    return Response::Error(stamped.ok() ? stamped->results[0].status() : stamped.status());
  }
  const uint64_t version = stamped->results[0]->version;
  if (stamped->entries.empty()) {
    // Nothing was written (e.g. a delete of a missing key): nothing to replicate.
    Release(bucket, /*write=*/true);
    return Response::Ok(transport::WriteResponse{.version = version});
  }
  const uint64_t rseq = stamped->entries.front().position.rseq;
  replication_.Ordered(bucket, rseq);
  Send(std::move(stamped->entries.front()));
  // The local sync runs while the backups apply.
  if (Status synced = store_->SyncWal(); !synced.ok()) {
    Release(bucket, /*write=*/true);
    return Response::Error(
        MakeStatus(StatusCode::kUnknown,
                   fmt::format("outcome unknown: the WAL sync failed: {}", synced.ToString())));
  }
  replication_.LocalSynced(bucket, rseq);
  const transport::Micros start = runtime_.Now();
  WriteState state = replication_.StateOf(bucket, rseq);
  while (state == WriteState::kPending && runtime_.Now() - start <= options_.call_timeout) {
    if (Status slept = runtime_.Sleep(options_.queue_poll); !slept.ok()) {
      Release(bucket, /*write=*/true);
      return Response::Error(slept);
    }
    state = replication_.StateOf(bucket, rseq);
  }
  Release(bucket, /*write=*/true);
  switch (state) {
    case WriteState::kCommitted:
      RecordWrite(request.collection, request.primary_key);
      return Response::Ok(transport::WriteResponse{.version = version});
    case WriteState::kPending:
      return Response::Error(MakeStatus(
          StatusCode::kDeadlineExceeded,
          fmt::format("outcome unknown: n{} applied the write, but its backups [{}] did not "
                      "acknowledge it in time",
                      options_.id.value(), NodeNames(replication_.Lagging(bucket, rseq)))));
    case WriteState::kAbandoned:
      return Response::Error(MakeStatus(
          StatusCode::kUnknown,
          fmt::format("outcome unknown: n{} stopped being the primary of {} before the write "
                      "reached every replica",
                      options_.id.value(), bucket.DebugString())));
  }
  return Response::Error(InternalError("unknown write state"));
}

Status StorageNode::AwaitReadable(BucketId bucket) {
  if (!replication_.Tracks(bucket)) return OkStatus();
  // Taken after the read: every write the read could see is at or below it.
  const uint64_t held = store_->GetReplicaState(bucket).position.rseq;
  const transport::Micros start = runtime_.Now();
  while (replication_.Watermark(bucket) < held) {
    if (!replication_.Tracks(bucket) || runtime_.Now() - start > options_.call_timeout) {
      return transport::MakeClusterError(
          transport::ClusterError::kNotServing,
          fmt::format("n{}: the writes of {} this read would return are not on every replica "
                      "yet; retry",
                      options_.id.value(), bucket.DebugString()));
    }
    SHOAL_RETURN_IF_ERROR(runtime_.Sleep(options_.queue_poll));
  }
  return OkStatus();
}

void StorageNode::ReplicaSenderLoop(NodeId backup, std::shared_ptr<ReplicaStreamQueue> queue) {
  ActiveGuard guard(this);
  transport::Micros backoff = options_.queue_poll;
  while (runtime_.Alive()) {
    std::optional<std::vector<storage::ReplicatedEntry>> batch = queue->Take();
    if (!batch.has_value()) {
      if (!runtime_.Sleep(options_.queue_poll).ok()) return;
      continue;
    }
    transport::ReplicateRequest message{
        .primary = options_.id, .epoch = epoch(), .entries = std::move(*batch)};
    auto response = runtime_.Call(Address::Node(backup), std::move(message), options_.call_timeout);
    if (response.ok() && response->status.ok()) {
      auto body = transport::BodyAs<transport::ReplicateResponse>(std::move(*response));
      if (body.ok()) {
        bool learn = false;
        for (const transport::ReplicaAck& ack : body->acks) {
          if (ack.status.ok()) {
            replication_.Acked(ack.bucket, backup, ack.position.rseq);
            continue;
          }
          // A newer term or primary elsewhere: this primary's pending writes can no longer
          // commit. A gap or a divergent copy needs a repair this stream cannot make.
          replication_.Abandon(ack.bucket);
          queue->DropBucket(ack.bucket);
          learn =
              learn || transport::ClusterErrorOf(ack.status) == transport::ClusterError::kStaleTerm;
        }
        queue->Delivered();
        backoff = options_.queue_poll;
        if (learn) (void)RefreshMap();
        continue;
      }
    }
    if (!response.ok() && response.status().code() == StatusCode::kCancelled) return;
    queue->Failed();
    backoff = std::min<transport::Micros>(backoff * 2, 100'000);
    if (!runtime_.Sleep(backoff).ok()) return;
  }
}

Response StorageNode::HandleReplicate(const transport::ReplicateRequest& request) {
  if (request.epoch > epoch()) (void)RefreshMap();
  const NodeId self = options_.id;
  // Which buckets' entries this node takes: its map names the sender their primary, at the
  // entries' term, and this node one of their backups.
  std::map<BucketId, Status> refused;
  {
    absl::MutexLock lock(&mu_);
    for (const storage::ReplicatedEntry& entry : request.entries) {
      if (refused.contains(entry.bucket)) continue;
      const BucketPlacement* placement = map_ == nullptr ? nullptr : map_->Find(entry.bucket);
      const bool member = placement != nullptr && !placement->transition.has_value() &&
                          placement->replicas.size() > 1 &&
                          placement->replicas.front() == request.primary &&
                          placement->HasReplica(self) && self != request.primary;
      if (!member || entry.position.term != placement->term) {
        refused.emplace(
            entry.bucket,
            transport::MakeClusterError(
                transport::ClusterError::kStaleTerm,
                fmt::format("n{} at {} does not take {}'s writes to {} at {}", self.value(),
                            map_ ? map_->epoch().DebugString() : "e0",
                            NodeId(request.primary).DebugString(), entry.bucket.DebugString(),
                            entry.position.term.DebugString())));
      }
    }
  }
  std::vector<storage::ReplicatedEntry> accepted;
  for (const storage::ReplicatedEntry& entry : request.entries) {
    if (!refused.contains(entry.bucket)) accepted.push_back(entry);
  }
  std::map<BucketId, Status> failed = refused;
  if (!accepted.empty()) {
    auto applied = store_->ApplyReplicated(accepted, storage::WalSync::kDeferred);
    if (!applied.ok()) return Response::Error(applied.status());
    for (size_t i = 0; i < accepted.size(); ++i) {
      const StatusOr<storage::ReplicaPosition>& result = (*applied)[i];
      if (!result.ok() && !failed.contains(accepted[i].bucket)) {
        failed.emplace(accepted[i].bucket, result.status());
      }
    }
    // One sync for the whole message, before any position is reported.
    if (Status synced = store_->SyncWal(); !synced.ok()) return Response::Error(synced);
  }
  transport::ReplicateResponse out;
  std::vector<BucketId> buckets;
  for (const storage::ReplicatedEntry& entry : request.entries) buckets.push_back(entry.bucket);
  std::sort(buckets.begin(), buckets.end());
  buckets.erase(std::unique(buckets.begin(), buckets.end()), buckets.end());
  for (BucketId bucket : buckets) {
    transport::ReplicaAck ack{.bucket = bucket, .status = OkStatus(), .position = {}};
    if (auto it = failed.find(bucket); it != failed.end()) ack.status = it->second;
    ack.position = store_->GetReplicaState(bucket).position;
    out.acks.push_back(std::move(ack));
  }
  return Response::Ok(std::move(out));
}

}  // namespace shoal::node
