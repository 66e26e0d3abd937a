// StorageNode: quiescing a replicated bucket for a split or a merge
// (docs/design/replication.md §7).
//
// A split or merge of a replicated bucket must find every replica of it equal: no write of the
// bucket may be ordered and not yet on every replica when the map changes its range, or a
// failover of one half could pick a copy without a write that another copy of that half holds
// under the other half's history. So the coordinator first quiesces the primary at the map's
// epoch E: writes of the bucket queue (reads go on) and the answer comes once every write
// ordered before is on every replica (the watermark reached the ordered rseq). The edit then
// commits only at epoch E and only while the quiesce holds (coordinator/resizer.h).
//
// The quiesce ends when a map after E arrives (the split or merge, or any other edit, after
// which the resize can no longer commit), or when the coordinator releases its token: at once
// when the resize fails, or through the heartbeat (HeartbeatRequest::quiesced) when its
// coordinator died before it could.

#include <fmt/format.h>

#include "absl/container/flat_hash_map.h"
#include "src/common/log.h"
#include "src/node/storage_node.h"

namespace shoal::node {

using cluster::BucketPlacement;
using transport::Response;

bool StorageNode::QuiescedLocked(BucketId bucket) const {
  if (quiesced_.empty()) return false;
  auto it = quiesced_.find(bucket);
  return it != quiesced_.end() && map_ != nullptr && it->second.epoch == map_->epoch();
}

void StorageNode::EndQuiescesLocked() {
  const MapEpoch now = map_->epoch();
  absl::erase_if(quiesced_, [now](const auto& entry) { return entry.second.epoch < now; });
}

std::vector<transport::QuiescedBucket> StorageNode::LongQuiesces() const {
  std::vector<transport::QuiescedBucket> out;
  const transport::Micros now = runtime_.Now();
  absl::MutexLock lock(&mu_);
  for (const auto& [bucket, quiesce] : quiesced_) {
    if (now - quiesce.since >= options_.fence_timeout) {
      out.push_back({.bucket = bucket, .token = quiesce.token});
    }
  }
  return out;
}

void StorageNode::LiftQuiesces(const std::vector<transport::QuiescedBucket>& released) {
  if (released.empty()) return;
  absl::MutexLock lock(&mu_);
  for (const transport::QuiescedBucket& q : released) {
    auto it = quiesced_.find(q.bucket);
    if (it != quiesced_.end() && it->second.token == q.token) quiesced_.erase(it);
  }
}

Response StorageNode::HandleQuiesce(const transport::QuiesceRequest& request) {
  if (request.release) {
    std::vector<transport::QuiescedBucket> released;
    for (BucketId bucket : request.buckets) {
      released.push_back({.bucket = bucket, .token = request.token});
    }
    LiftQuiesces(released);
    return Response::Ok();
  }
  if (epoch() < request.epoch) {
    if (Status s = RefreshMap(); !s.ok()) return Response::Error(s);
  }
  const NodeId self = options_.id;
  {
    absl::MutexLock lock(&mu_);
    if (map_ == nullptr || map_->epoch() != request.epoch) {
      return Response::Error(AbortedError(fmt::format(
          "n{} is at {}, not at the quiesce's {}: the map changed; retry", self.value(),
          map_ == nullptr ? "no map" : map_->epoch().DebugString(), request.epoch.DebugString())));
    }
    for (BucketId bucket : request.buckets) {
      const BucketPlacement* placement = map_->Find(bucket);
      if (placement == nullptr || !ReplicatedPrimaryLocked(*placement) ||
          placement->transition.has_value() || TermClosedLocked(*placement)) {
        return Response::Error(FailedPreconditionError(
            fmt::format("n{} is not the serving primary of {} at {}", self.value(),
                        bucket.DebugString(), request.epoch.DebugString())));
      }
    }
    for (BucketId bucket : request.buckets) {
      quiesced_[bucket] =
          Quiesce{.epoch = request.epoch, .token = request.token, .since = runtime_.Now()};
    }
  }
  // Writes admitted before the quiesce finish, and every write ordered is on every replica.
  const transport::Micros start = runtime_.Now();
  while (true) {
    std::string behind;
    {
      absl::MutexLock lock(&mu_);
      if (map_->epoch() != request.epoch) {
        return Response::Error(
            AbortedError(fmt::format("n{}: the map changed from {} during the quiesce",
                                     self.value(), request.epoch.DebugString())));
      }
      for (BucketId bucket : request.buckets) {
        auto it = quiesced_.find(bucket);
        if (it == quiesced_.end() || it->second.token != request.token) {
          return Response::Error(AbortedError(fmt::format("n{}: the quiesce of {} was released",
                                                          self.value(), bucket.DebugString())));
        }
        auto inflight = inflight_writes_.find(bucket);
        const uint64_t ordered = replication_.OrderedRseq(bucket);
        const uint64_t held = store_->GetReplicaState(bucket).position.rseq;
        if ((inflight != inflight_writes_.end() && inflight->second != 0) || held != ordered ||
            replication_.Watermark(bucket) < ordered) {
          behind = fmt::format("{}: {} on every replica of {} ordered", bucket.DebugString(),
                               replication_.Watermark(bucket), ordered);
          break;
        }
      }
    }
    if (behind.empty()) return Response::Ok();
    if (runtime_.Now() - start > options_.fence_timeout) {
      return Response::Error(UnavailableError(
          fmt::format("n{}: the quiesce did not settle: {}", self.value(), behind)));
    }
    if (Status s = runtime_.Sleep(options_.queue_poll); !s.ok()) return Response::Error(s);
  }
}

void StorageNode::StartNewBucketsLocked(const cluster::ShardMap& before) {
  // A bucket id this node did not have in its previous map, of which it is a replica now, is a
  // split's upper half: it starts a history of its own (its term is the split's epoch) from
  // the data the quiesce left equal on every replica. An id can come back after a merge took it
  // away; a state left from then is cleared.
  for (const BucketPlacement& bucket : map_->buckets()) {
    if (before.Find(bucket.id) != nullptr || !bucket.HasReplica(options_.id)) continue;
    const storage::ReplicaState state = store_->GetReplicaState(bucket.id);
    if (state.history.empty() && state.position.rseq == 0) continue;
    if (Status s = store_->SetReplicaState(bucket.id, storage::ReplicaState{}); !s.ok()) {
      log::Warning("node.reset_replica_state",
                   {{"bucket", bucket.id.value()}, {"error", s.ToString()}});
    }
  }
}

}  // namespace shoal::node
