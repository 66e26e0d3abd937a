#include "src/coordinator/replica_manager.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "src/common/log.h"

namespace shoal::coordinator {

using cluster::BucketPlacement;
using cluster::ShardMap;
using cluster::ShardMapEdit;
using cluster::ShardMapPtr;
using transport::Address;
using transport::Response;

ReplicaManager::ReplicaManager(transport::Runtime& runtime, std::shared_ptr<MapCommitter> committer,
                               std::shared_ptr<Membership> membership,
                               const CoordinatorOptions& options)
    : runtime_(runtime),
      committer_(std::move(committer)),
      membership_(std::move(membership)),
      options_(options) {}

Response ReplicaManager::HandleReport(const transport::ReplicaReportRequest& report) {
  bool removed = false;
  uint64_t also_removed = 0;  // the primary's other buckets the silent backup left too
  auto committed = committer_->CommitEdit([&](const ShardMap& map, ShardMapEdit* edit) {
    removed = false;
    also_removed = 0;
    const BucketPlacement* bucket = map.Find(report.bucket);
    if (bucket == nullptr || bucket->replicas.empty() ||
        bucket->replicas.front() != report.primary || bucket->term != report.term) {
      return transport::MakeClusterError(
          transport::ClusterError::kStaleTerm,
          fmt::format("{} is not the primary of {} at {} in {}", report.primary.DebugString(),
                      report.bucket.DebugString(), report.term.DebugString(),
                      map.epoch().DebugString()));
    }
    if (report.backup == report.primary || !bucket->HasReplica(report.backup)) {
      return OkStatus();  // removed already
    }
    if (report.broken) {
      edit->DropReplica(report.bucket, report.backup);
      removed = true;
      return OkStatus();
    }
    if (bucket->replicas.size() - 1 < map.min_in_sync()) {
      return transport::MakeClusterError(
          transport::ClusterError::kNotEnoughReplicas,
          fmt::format("{} keeps {} replicas: removing {} would undercut min_in_sync {}",
                      report.bucket.DebugString(), bucket->replicas.size(),
                      report.backup.DebugString(), map.min_in_sync()));
    }
    edit->RemoveReplica(report.bucket, report.backup);
    removed = true;
    // A primary replicates to a backup over one stream for all its buckets, so a silent backup
    // is silent for each of them: it leaves every bucket of this primary in this edit, as far
    // as each one's floor allows and none moving, instead of one map edit per bucket, which
    // with thousands of buckets kept writes waiting seconds for their bucket's turn. The
    // primary then reports only the buckets still listing it (StorageNode::ReportSilentBackup).
    for (const BucketPlacement& other : map.buckets()) {
      if (other.id == report.bucket || other.replicas.empty() ||
          other.replicas.front() != report.primary || !other.HasReplica(report.backup) ||
          other.transition.has_value() || other.replicas.size() - 1 < map.min_in_sync()) {
        continue;
      }
      edit->RemoveReplica(other.id, report.backup);
      ++also_removed;
    }
    return OkStatus();
  });
  if (!committed.ok()) return Response::Error(committed.status());
  if (removed) {
    log::Warning("replica.removed", {{"bucket", report.bucket.value()},
                                     {"backup", report.backup.value()},
                                     {"primary", report.primary.value()},
                                     {"reason", report.reason},
                                     {"broken", report.broken},
                                     {"also_removed", also_removed},
                                     {"epoch", (*committed)->epoch().value()}});
    NoteRemoval(report.backup);
  }
  return Response::Ok();
}

void ReplicaManager::NoteCopies(const ShardMap& map) {
  std::map<NodeId, size_t> copies;
  for (const cluster::NodeInfo& node : map.nodes()) copies[node.id] = 0;
  for (const BucketPlacement& bucket : map.buckets()) {
    for (NodeId node : bucket.replicas) ++copies[node];
  }
  for (const auto& [node, count] : copies) membership_->flaps().NoteCopies(node, count);
}

void ReplicaManager::NoteRemoval(NodeId node) {
  if (membership_->flaps().NoteRemoval(node, runtime_.Now())) {
    log::Warning("replica.flap_damped",
                 {{"node", node.value()},
                  {"removals", FlapDamper::kDampAfterRemovals},
                  {"within_s", FlapDamper::kDampWindow / 1'000'000},
                  {"no_new_copies_until_stable_s", FlapDamper::kStableFor / 1'000'000}});
  }
}

void ReplicaManager::NoteHeartbeat(const transport::HeartbeatRequest& heartbeat) {
  absl::MutexLock lock(&mu_);
  if (heartbeat.store_id != 0) store_ids_[heartbeat.node] = heartbeat.store_id;
  if (heartbeat.incarnation != 0) {
    uint64_t& known = incarnations_[heartbeat.node];
    if (known != 0 && known != heartbeat.incarnation) {
      log::Info("node.restarted", {{"node", heartbeat.node.value()}});
    }
    known = heartbeat.incarnation;
  }
  fenced_[heartbeat.node] = heartbeat.fenced;
}

void ReplicaManager::Run() {
  while (runtime_.Alive()) {
    if (Status s = Round(); !s.ok()) {
      log::Warning("replica.round", {{"error", s.ToString()}});
    }
    if (!runtime_.Sleep(options_.replica_poll).ok()) return;
  }
}

Status ReplicaManager::Round() {
  const ShardMapPtr map = committer_->map();
  if (map == nullptr || map->replication_factor() <= 1) return OkStatus();
  NoteCopies(*map);
  std::map<NodeId, std::vector<transport::BucketTerm>> fenced;
  std::map<NodeId, uint64_t> stores;
  {
    absl::MutexLock lock(&mu_);
    fenced = fenced_;
    stores = store_ids_;
  }
  std::map<NodeId, std::vector<transport::BucketTerm>> failovers;  // by primary
  std::set<NodeId> silent_primaries;            // of failovers not all due to the primary's restart
  std::vector<transport::BucketTerm> renewals;  // fenced buckets with no other replica
  for (const BucketPlacement& bucket : map->buckets()) {
    // A committed move finishes with metadata edits alone; its failover waits for it. An
    // uncommitted one is aborted by the promotion (below).
    if (bucket.replicas.empty() ||
        (bucket.transition.has_value() && cluster::IsCommitted(bucket.transition->stage))) {
      continue;
    }
    const NodeId primary = bucket.replicas.front();
    const transport::BucketTerm at{.bucket = bucket.id, .term = bucket.term};
    // Closed at its term by the primary (restarted) or by a backup (sealed by a failover that
    // did not finish): only a failover lets the bucket serve again.
    const auto closed_by = [&](NodeId node) {
      const auto& reported = fenced[node];
      return std::any_of(reported.begin(), reported.end(),
                         [&](const auto& f) { return f.bucket == at.bucket && f.term == at.term; });
    };
    const bool is_fenced = std::any_of(bucket.replicas.begin(), bucket.replicas.end(), closed_by);
    if (bucket.replicas.size() == 1) {
      // The only copy restarted: nothing else can serve, so its own store (if it is the one the
      // map binds) gets a new term.
      const cluster::NodeInfo* info = map->FindNode(primary);
      if (is_fenced && info != nullptr &&
          (info->store_id == 0 || info->store_id == stores[primary])) {
        renewals.push_back(at);
      }
      continue;
    }
    if (is_fenced || membership_->SilentFor(primary) > options_.failover_timeout) {
      failovers[primary].push_back(at);
      // Closed by the primary itself: a new incarnation, which serves none of these terms.
      if (!closed_by(primary)) silent_primaries.insert(primary);
    }
  }
  Status first = OkStatus();
  if (!renewals.empty()) {
    auto renewed = committer_->CommitEdit([&](const ShardMap& now, ShardMapEdit* edit) {
      for (const transport::BucketTerm& at : renewals) {
        const BucketPlacement* bucket = now.Find(at.bucket);
        if (bucket != nullptr && bucket->replicas.size() == 1 && bucket->term == at.term &&
            !bucket->transition.has_value()) {
          edit->ForcePrimary(at.bucket, bucket->replicas.front());
        }
      }
      return OkStatus();
    });
    if (!renewed.ok()) first = renewed.status();
  }
  for (const auto& [primary, buckets] : failovers) {
    if (Status s = Failover(primary, buckets, silent_primaries.contains(primary));
        !s.ok() && first.ok()) {
      first = s;
    }
  }
  if (Status s = SyncStores(); !s.ok() && first.ok()) first = s;
  return first;
}

Status ReplicaManager::Failover(NodeId primary, const std::vector<transport::BucketTerm>& buckets,
                                bool silent) {
  const ShardMapPtr map = committer_->map();
  // 1. SEAL each reachable backup at the buckets' terms, in one call per backup.
  std::map<NodeId, transport::SealTermRequest> seals;
  for (const transport::BucketTerm& at : buckets) {
    const BucketPlacement* bucket = map->Find(at.bucket);
    if (bucket == nullptr) continue;
    for (size_t i = 1; i < bucket->replicas.size(); ++i) {
      seals[bucket->replicas[i]].buckets.push_back(at);
    }
  }
  std::map<BucketId, std::vector<Answer>> answers;
  for (auto& [node, request] : seals) {
    if (membership_->SilentFor(node) > options_.failover_timeout) continue;  // down as well
    auto response = runtime_.Call(Address::Node(node), request, options_.call_timeout);
    if (!response.ok()) continue;
    auto body = transport::BodyAs<transport::SealTermResponse>(std::move(*response));
    if (!body.ok()) continue;
    const cluster::NodeInfo* info = map->FindNode(node);
    // A copy in a store the map does not bind (wiped, replaced) is never chosen.
    if (info == nullptr || (info->store_id != 0 && info->store_id != body->store_id)) continue;
    for (const transport::SealedBucket& sealed : body->buckets) {
      answers[sealed.bucket].push_back(Answer{
          .node = node, .position = sealed.position, .micros_since_ack = sealed.micros_since_ack});
    }
  }
  const transport::Micros answered_at = runtime_.Now();
  SHOAL_RETURN_IF_ERROR(runtime_.Failpoint("coordinator.after_seal"));
  // 2. WAIT until the old primary's read lease has run out: it needs every backup's renewals,
  // so the oldest last acknowledgement among a bucket's sealed backups bounds it.
  const auto lease_bound = static_cast<uint64_t>(options_.read_lease + options_.clock_drift);
  transport::Micros wait = 0;
  for (const auto& [bucket, list] : answers) {
    uint64_t oldest = 0;
    for (const Answer& a : list) {
      // A backup that has not acknowledged since it started may have renewed the lease before
      // its restart: its renewal counts as just now.
      oldest = std::max(oldest, a.micros_since_ack == UINT64_MAX ? 0 : a.micros_since_ack);
    }
    if (oldest < lease_bound) {
      wait =
          std::max<transport::Micros>(wait, static_cast<transport::Micros>(lease_bound - oldest));
    }
  }
  // A primary whose silent backup was kept at the floor takes its lease from this
  // coordinator's heartbeat answers instead (ReplicationLog::Excuse): that one runs out once the
  // primary has been silent for as long.
  const transport::Micros quiet = membership_->SilentFor(primary);
  if (silent && quiet < static_cast<transport::Micros>(lease_bound)) {
    wait = std::max<transport::Micros>(wait, static_cast<transport::Micros>(lease_bound) - quiet);
  }
  wait -= runtime_.Now() - answered_at;
  if (wait > 0) SHOAL_RETURN_IF_ERROR(runtime_.Sleep(wait));
  SHOAL_RETURN_IF_ERROR(runtime_.Failpoint("coordinator.before_promote"));
  // 3. CHOOSE and 4. COMMIT, against the map as it is now: a bucket whose primary or term changed
  // meanwhile is left alone.
  struct Promotion {
    BucketId bucket;
    NodeId winner;
    storage::ReplicaPosition position;
    std::vector<NodeId> removed;
  };
  std::vector<Promotion> promotions;
  auto committed = committer_->CommitEdit([&](const ShardMap& now, ShardMapEdit* edit) {
    promotions.clear();
    for (const transport::BucketTerm& at : buckets) {
      const BucketPlacement* bucket = now.Find(at.bucket);
      if (bucket == nullptr || bucket->replicas.size() < 2 || bucket->replicas.front() != primary ||
          bucket->term != at.term ||
          (bucket->transition.has_value() &&
           !cluster::CanAbort(bucket->transition->stage, bucket->transition->mode))) {
        continue;
      }
      auto it = answers.find(at.bucket);
      if (it == answers.end() || it->second.empty()) {
        if (WarnOnce(at)) {
          log::Warning("replica.no_candidate",
                       {{"bucket", at.bucket.value()}, {"primary", primary.value()}});
        }
        continue;
      }
      const Answer* winner = nullptr;
      for (const Answer& a : it->second) {
        if (!bucket->HasReplica(a.node)) continue;
        if (winner == nullptr || a.position > winner->position) {  // (term, rseq) order
          winner = &a;
        }
      }
      if (winner == nullptr) continue;
      // The winner must be the most advanced copy of every replica the bucket keeps: a backup
      // that did not answer leaves in the same edit (while the old primary still counts towards
      // min_in_sync), or, where the floor keeps it, nothing is promoted until it answers.
      std::vector<NodeId> silent;
      for (size_t i = 1; i < bucket->replicas.size(); ++i) {
        const NodeId backup = bucket->replicas[i];
        if (std::none_of(it->second.begin(), it->second.end(),
                         [&](const Answer& a) { return a.node == backup; })) {
          silent.push_back(backup);
        }
      }
      if (bucket->replicas.size() - silent.size() < now.min_in_sync()) {
        if (WarnOnce(at)) {
          log::Warning("replica.wait_for_backups", {{"bucket", at.bucket.value()},
                                                    {"primary", primary.value()},
                                                    {"silent", silent.size()}});
        }
        continue;
      }
      // A copy being added or a backup being replaced from the old primary: the move ends here
      // (its task finds it gone), and the new primary's balancer plans it again.
      if (bucket->transition.has_value()) {
        edit->AbortTransition(at.bucket, bucket->transition->move);
      }
      for (NodeId backup : silent) edit->RemoveReplica(at.bucket, backup);
      edit->PromoteReplica(at.bucket, winner->node);
      promotions.push_back(Promotion{.bucket = at.bucket,
                                     .winner = winner->node,
                                     .position = winner->position,
                                     .removed = silent});
    }
    return OkStatus();
  });
  SHOAL_RETURN_IF_ERROR(committed.status());
  for (const Promotion& p : promotions) {
    const BucketPlacement* bucket = (*committed)->Find(p.bucket);
    log::Warning("replica.failover",
                 {{"bucket", p.bucket.value()},
                  {"old_primary", primary.value()},
                  {"new_primary", p.winner.value()},
                  {"term", bucket == nullptr ? uint64_t{0} : bucket->term.value()},
                  {"at", p.position.DebugString()},
                  {"removed", p.removed.size()},
                  {"waited_ms", std::max<transport::Micros>(wait, 0) / 1000},
                  {"epoch", (*committed)->epoch().value()}});
    NoteRemoval(primary);
    for (NodeId backup : p.removed) NoteRemoval(backup);
  }
  SHOAL_RETURN_IF_ERROR(runtime_.Failpoint("coordinator.after_promote"));
  return OkStatus();
}

bool ReplicaManager::WarnOnce(const transport::BucketTerm& at) {
  absl::MutexLock lock(&mu_);
  return warned_.emplace(at.bucket, at.term).second;
}

Status ReplicaManager::SyncStores() {
  std::map<NodeId, uint64_t> stores;
  {
    absl::MutexLock lock(&mu_);
    stores = store_ids_;
  }
  std::vector<std::pair<NodeId, uint64_t>> reset;
  auto committed = committer_->CommitEdit([&](const ShardMap& map, ShardMapEdit* edit) {
    reset.clear();
    for (const auto& [node, store] : stores) {
      const cluster::NodeInfo* info = map.FindNode(node);
      if (info == nullptr || info->store_id == store) continue;
      if (info->store_id == 0) {
        edit->BindStore(node, store);
        continue;
      }
      // Its buckets' failovers come first: a node with a new store reports them fenced.
      const NodeId id = node;  // a structured binding is not captured by lambdas in C++20
      const bool primary = std::any_of(
          map.buckets().begin(), map.buckets().end(), [id](const BucketPlacement& bucket) {
            return bucket.replicas.size() > 1 && bucket.replicas.front() == id;
          });
      if (primary) continue;
      edit->ResetNode(node, store);
      reset.emplace_back(node, store);
    }
    return OkStatus();
  });
  SHOAL_RETURN_IF_ERROR(committed.status());
  for (const auto& [node, store] : reset) {
    log::Warning("replica.reset_node", {{"node", node.value()},
                                        {"store", fmt::format("{:#x}", store)},
                                        {"epoch", (*committed)->epoch().value()}});
  }
  return OkStatus();
}

}  // namespace shoal::coordinator
