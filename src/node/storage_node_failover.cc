// StorageNode: its part in failure handling of replicated buckets (storage_node.h, REPLICATION;
// docs/design/replication.md §4).
//
// - RESTART FENCE (§4.4): a primary sends before its own WAL sync and loses its stream state in a
//   crash, so after a start it serves none of the buckets it was the replicated primary of (and
//   wrote to) at the term it held; its heartbeats name them and the coordinator ends the term by
//   a failover, which this node may win with a new term.
// - SEAL (§4.2 step 2): a replica sealed at a term refuses that term's stream from then on, also
//   after a restart (the seal is durable before the answer), which stops renewing that
//   primary's read lease, and answers its position, its store id and
//   how long ago it last acknowledged the primary; a sealed primary serves nothing at the term.
// - REPORT (§4.1): a primary reports a silent or broken backup; the coordinator removes it from
//   the bucket, and the primary's writes waiting for it commit once the new map is installed. A
//   silent backup's buckets are reported one after the other on one task, each only if the map
//   the previous answer installed still lists the backup there: the coordinator removes it from
//   every bucket of this primary it can in one edit.

#include <fmt/format.h>

#include <optional>
#include <set>
#include <string>

#include "src/common/log.h"
#include "src/node/storage_node.h"

namespace shoal::node {

using cluster::BucketPlacement;
using transport::Address;
using transport::Response;

bool StorageNode::StoreReplacedLocked() const {
  const cluster::NodeInfo* self = map_ == nullptr ? nullptr : map_->FindNode(options_.id);
  return self != nullptr && self->store_id != 0 && self->store_id != store_->store_id();
}

bool StorageNode::TermClosedLocked(const BucketPlacement& bucket) const {
  auto fenced = restart_fenced_.find(bucket.id);
  auto sealed = sealed_.find(bucket.id);
  return StoreReplacedLocked() ||
         (fenced != restart_fenced_.end() && fenced->second >= bucket.term) ||
         (sealed != sealed_.end() && sealed->second >= bucket.term);
}

Status StorageNode::GateReplicatedLocked(const BucketPlacement& bucket, Access access,
                                         Admitted* admitted) const {
  // A backup answers kReadAnyReplica after its own check (CheckBackupRead); the primary
  // answers it as a latest read.
  if (!ReplicatedPrimaryLocked(bucket)) return OkStatus();
  if (TermClosedLocked(bucket)) {
    admitted->admission = Admission::kQueue;  // until a map with a new term
    return OkStatus();
  }
  if (access == Access::kWrite && QuiescedLocked(bucket.id)) {
    admitted->admission = Admission::kQueue;  // until the split or merge, or its release
    return OkStatus();
  }
  if (auto blocked = floor_blocked_.find(bucket.id);
      access == Access::kWrite && blocked != floor_blocked_.end()) {
    return transport::MakeClusterError(
        transport::ClusterError::kNotEnoughReplicas,
        fmt::format("{}: backup {} does not answer and removing it would leave fewer than "
                    "min_in_sync {} replicas: writes wait for it",
                    bucket.id.DebugString(), blocked->second.DebugString(), map_->min_in_sync()));
  }
  if (access == Access::kWrite && bucket.replicas.size() < map_->min_in_sync()) {
    return transport::MakeClusterError(
        transport::ClusterError::kNotEnoughReplicas,
        fmt::format("{} has {} in-sync replica(s), fewer than min_in_sync {}: writes wait for a "
                    "replica to be rebuilt; reads go on",
                    bucket.id.DebugString(), bucket.replicas.size(), map_->min_in_sync()));
  }
  admitted->replicated = true;
  return OkStatus();
}

void StorageNode::FenceRestartedTermsLocked() {
  for (const BucketPlacement& bucket : map_->buckets()) {
    if (!ReplicatedPrimaryLocked(bucket)) continue;
    // A bucket with no term history here never had a write ordered or applied: nothing of it
    // can have been sent and lost.
    if (store_->GetReplicaState(bucket.id).current_term() == Term(0)) continue;
    restart_fenced_[bucket.id] = bucket.term;
    log::Info("replica.restart_fence", {{"node", options_.id.value()},
                                        {"bucket", bucket.id.value()},
                                        {"term", bucket.term.value()}});
  }
}

std::vector<transport::BucketTerm> StorageNode::FencedTerms() const {
  std::vector<transport::BucketTerm> fenced;
  absl::MutexLock lock(&mu_);
  if (map_ == nullptr) return fenced;
  if (StoreReplacedLocked()) {
    // This store is not the one the map lists: none of its copies may serve.
    for (const BucketPlacement& bucket : map_->buckets()) {
      if (ReplicatedPrimaryLocked(bucket))
        fenced.push_back({.bucket = bucket.id, .term = bucket.term});
    }
    return fenced;
  }
  for (const auto& [bucket, term] : restart_fenced_) {
    const BucketPlacement* placement = map_->Find(bucket);
    if (placement != nullptr && ReplicatedPrimaryLocked(*placement) && placement->term == term) {
      fenced.push_back({.bucket = bucket, .term = term});
    }
  }
  // A seal whose failover never finished closes the term for good: report it, so that a new
  // coordinator finishes the failover. At the primary, the term a backup answered sealed at
  // (CloseTermSealedAtBackup): that backup may have forgotten its seal in a restart, or left.
  for (const auto& [bucket, term] : sealed_) {
    const BucketPlacement* placement = map_->Find(bucket);
    if (placement != nullptr && placement->term == term && placement->HasReplica(options_.id)) {
      fenced.push_back({.bucket = bucket, .term = term});
    }
  }
  std::sort(fenced.begin(), fenced.end(),
            [](const auto& a, const auto& b) { return a.bucket < b.bucket; });
  return fenced;
}

void StorageNode::ForgetMootSealsLocked() {
  std::vector<BucketId> moot;
  for (auto it = sealed_.begin(); it != sealed_.end();) {
    const BucketPlacement* placement = map_->Find(it->first);
    if (placement == nullptr || placement->term > it->second) {
      moot.push_back(it->first);
      sealed_.erase(it++);
    } else {
      ++it;
    }
  }
  if (moot.empty()) return;
  if (Status s = store_->ForgetSeals(moot); !s.ok()) {
    log::Warning("replica.forget_seals", {{"node", options_.id.value()}, {"error", s.ToString()}});
  }
}

Response StorageNode::HandleSealTerm(const transport::SealTermRequest& request) {
  transport::SealTermResponse out{.store_id = store_->store_id(), .buckets = {}};
  // Durable before the answer: the coordinator waits out the old primary's lease on the word
  // of this answer, and a restart meanwhile must not let this replica renew that lease.
  std::vector<std::pair<BucketId, Term>> seals;
  seals.reserve(request.buckets.size());
  for (const transport::BucketTerm& seal : request.buckets)
    seals.emplace_back(seal.bucket, seal.term);
  if (Status recorded = store_->RecordSeals(seals); !recorded.ok()) {
    return Response::Error(recorded);
  }
  const transport::Micros now = runtime_.Now();
  absl::MutexLock lock(&mu_);
  for (const transport::BucketTerm& seal : request.buckets) {
    Term& sealed = sealed_[seal.bucket];
    sealed = std::max(sealed, seal.term);
    transport::SealedBucket answer{.bucket = seal.bucket,
                                   .position = store_->GetReplicaState(seal.bucket).position,
                                   .micros_since_ack = UINT64_MAX};
    if (auto last = last_ack_.find(seal.bucket); last != last_ack_.end()) {
      answer.micros_since_ack =
          static_cast<uint64_t>(std::max<transport::Micros>(0, now - last->second));
    }
    out.buckets.push_back(answer);
  }
  // A primary sealed here stops replicating the term: its pending writes are abandoned.
  if (map_ != nullptr) ConfigureReplicationLocked();
  log::Info("replica.sealed", {{"node", options_.id.value()}, {"buckets", request.buckets.size()}});
  return Response::Ok(std::move(out));
}

void StorageNode::ReportBackup(BucketId bucket, Term term, NodeId backup, std::string reason,
                               bool broken) {
  runtime_.Spawn(
      Address::Node(options_.id),
      fmt::format("n{}.report-n{}-b{}", options_.id.value(), backup.value(), bucket.value()),
      [node = shared_from_this(), bucket, term, backup, reason = std::move(reason), broken] {
        ActiveGuard guard(node.get());
        (void)node->ReportBackupNow(
            transport::BucketTerm{.bucket = bucket, .term = term, .committed = 0}, backup, reason,
            broken);
      });
}

void StorageNode::ReportSilentBackup(NodeId backup, std::string reason) {
  runtime_.Spawn(Address::Node(options_.id),
                 fmt::format("n{}.report-silent-n{}", options_.id.value(), backup.value()),
                 [node = shared_from_this(), backup, reason = std::move(reason)] {
                   ActiveGuard guard(node.get());
                   std::set<BucketId> reported;
                   while (node->runtime_.Alive()) {
                     // The next bucket still replicated to the backup in the map the last answer
                     // brought.
                     std::optional<transport::BucketTerm> next;
                     for (const transport::BucketTerm& t : node->TermsFor(backup)) {
                       if (!reported.contains(t.bucket)) {
                         next = t;
                         break;
                       }
                     }
                     if (!next.has_value()) return;
                     reported.insert(next->bucket);
                     const Status status =
                         node->ReportBackupNow(*next, backup, reason, /*broken=*/false);
                     const auto error = transport::ClusterErrorOf(status);
                     // The coordinator did not answer: the keeper reports again after
                     // replica_ack_timeout.
                     if (!status.ok() && error != transport::ClusterError::kNotEnoughReplicas &&
                         error != transport::ClusterError::kStaleTerm) {
                       return;
                     }
                   }
                 });
}

Status StorageNode::ReportBackupNow(const transport::BucketTerm& at, NodeId backup,
                                    const std::string& reason, bool broken) {
  {
    absl::MutexLock lock(&mu_);
    ++counters_.backup_reports;
  }
  transport::ReplicaReportRequest report{.primary = options_.id,
                                         .bucket = at.bucket,
                                         .term = at.term,
                                         .backup = backup,
                                         .reason = reason,
                                         .broken = broken};
  auto response = runtime_.Call(Address::Coordinator(), std::move(report), options_.call_timeout);
  const Status status = !response.ok() ? response.status() : response->status;
  log::Info("replica.report", {{"node", options_.id.value()},
                               {"bucket", at.bucket.value()},
                               {"backup", backup.value()},
                               {"reason", reason},
                               {"answer", status.ok() ? "removed" : status.ToString()}});
  const auto error = transport::ClusterErrorOf(status);
  if (error == transport::ClusterError::kNotEnoughReplicas) {
    BlockAtFloor(at.bucket, backup);
    return status;
  }
  // Removed (or no longer ours to report): the new map lets the writes go on.
  if (status.ok() || error == transport::ClusterError::kStaleTerm) (void)RefreshMap();
  return status;
}

void StorageNode::BlockAtFloor(BucketId bucket, NodeId backup) {
  absl::MutexLock lock(&mu_);
  const BucketPlacement* placement = map_ == nullptr ? nullptr : map_->Find(bucket);
  if (placement == nullptr || !placement->HasReplica(backup)) return;
  if (floor_blocked_.insert_or_assign(bucket, backup).second) ++floor_blocked_count_;
  replication_.Excuse(bucket, backup);
}

void StorageNode::UnblockAtFloor(BucketId bucket, NodeId backup) {
  if (floor_blocked_count_.load() == 0) return;
  absl::MutexLock lock(&mu_);
  auto it = floor_blocked_.find(bucket);
  if (it == floor_blocked_.end() || it->second != backup) return;
  floor_blocked_.erase(it);
  --floor_blocked_count_;
  replication_.Excuse(bucket, std::nullopt);
}

}  // namespace shoal::node
