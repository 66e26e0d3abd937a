#include "src/coordinator/coordinator.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "src/cluster/replication_setting.h"
#include "src/common/log.h"
#include "src/common/overloaded.h"
#include "src/coordinator/coordinator_internal.h"

namespace shoal::coordinator {

using cluster::ShardMap;
using cluster::ShardMapEdit;
using cluster::ShardMapPtr;
using transport::Address;
using transport::Response;

namespace {

// Whether `node` may join the cluster of `map` (AddNode, and `shoal plan --add`).
Status CheckJoin(const ShardMap& map, NodeId node) {
  if (map.HasNode(node)) {
    return AlreadyExistsError(fmt::format("{} is a member already", node.DebugString()));
  }
  return OkStatus();
}

// Whether `node` may leave the cluster of `map` (RemoveNode, and `shoal plan --remove`).
Status CheckLeave(const ShardMap& map, NodeId node) {
  const auto* info = map.FindNode(node);
  if (info == nullptr) return NotFoundError(fmt::format("{} is not a member", node.DebugString()));
  if (info->state != cluster::NodeState::kActive) return OkStatus();  // leaving already
  const size_t active = map.ActiveNodes().size();
  if (active <= 1) return FailedPreconditionError("cannot remove the last active node");
  // Its copies would have nowhere to go: the node would stay leaving for good.
  if (active - 1 < map.replication_factor()) {
    return FailedPreconditionError(fmt::format(
        "cannot remove {}: {} active nodes would remain for K = {} copies of every bucket, one "
        "per node; add a node first, or lower K (shoal replicas --set {})",
        node.DebugString(), active - 1, map.replication_factor(), active - 1));
  }
  return OkStatus();
}

// The copies a lower K trimmed from the configurations: of a bucket with the same range in both
// maps whose replicas in `after` are K of `after` and the first ones of `before`, each replica of
// `before` past them. (A bucket short of copies keeps every copy: a repair resumes one, and
// force-primary may need it.) Each gets one drop at `after`'s epoch, as a move's leaving copy
// does, so that its disk is freed now. The node refuses a drop of a range its map shows it serving
// or receiving; a copy whose drop fails is a copy outside the replicas, dropped by the balancer
// once its bucket has been whole for stale_copy_grace (docs/design/replication.md §6.1).
Status DropTrimmedCopies(MoveExecutor& executor, const ShardMap& before, const ShardMap& after) {
  for (const auto& bucket : after.buckets()) {
    const auto* old = before.Find(bucket.id);
    if (old == nullptr || old->range != bucket.range || bucket.transition.has_value() ||
        bucket.replicas.size() != after.replication_factor() ||
        old->replicas.size() <= bucket.replicas.size() ||
        !std::equal(bucket.replicas.begin(), bucket.replicas.end(), old->replicas.begin())) {
      continue;
    }
    for (size_t i = bucket.replicas.size(); i < old->replicas.size(); ++i) {
      const NodeId node = old->replicas[i];
      auto dropped = executor.CallNode(
          node,
          transport::DropBucketRequest{.epoch = after.epoch(),
                                       .move = MoveId(0),
                                       .bucket = bucket.id,
                                       .range = transport::ToPointRange(bucket.range)},
          /*attempts=*/1);
      if (!dropped.ok() && dropped.status().code() == StatusCode::kCancelled) {
        return dropped.status();
      }
      const Status status = dropped.ok() ? dropped->status : dropped.status();
      if (!status.ok()) {
        log::Warning(
            "copy.drop_trimmed_failed",
            {{"node", node.value()}, {"bucket", bucket.id.value()}, {"error", status.ToString()}});
        continue;
      }
      log::Info("copy.drop_trimmed", {{"node", node.value()},
                                      {"bucket", bucket.id.value()},
                                      {"epoch", after.epoch().value()}});
    }
  }
  return OkStatus();
}

}  // namespace

Coordinator::Coordinator(transport::Runtime& runtime, metadata::MetadataStore& store,
                         const CoordinatorOptions& options)
    : runtime_(runtime),
      membership_(
          std::make_shared<Membership>(runtime, options.node_timeout, options.call_timeout)),
      committer_(std::make_shared<MapCommitter>(runtime, store, membership_, options.call_timeout)),
      progress_(std::make_shared<ProgressCounters>()),
      executor_(std::make_shared<MoveExecutor>(runtime, store, committer_, membership_, progress_,
                                               options)),
      resizer_(std::make_shared<Resizer>(runtime, committer_, options.call_timeout)),
      floor_(std::make_shared<ReplicationFloor>(store, committer_)),
      balancer_(std::make_shared<BalancerLoop>(runtime, store, committer_, membership_, executor_,
                                               resizer_, options, floor_)),
      replicas_(std::make_shared<ReplicaManager>(runtime, committer_, membership_, options)) {}

StatusOr<std::shared_ptr<Coordinator>> Coordinator::Open(transport::Runtime& runtime,
                                                         metadata::MetadataStore& store,
                                                         const CoordinatorOptions& options) {
  std::shared_ptr<Coordinator> coordinator(new Coordinator(runtime, store, options));
  SHOAL_RETURN_IF_ERROR(coordinator->committer_->Load());
  SHOAL_RETURN_IF_ERROR(coordinator->balancer_->LoadThresholds());
  SHOAL_RETURN_IF_ERROR(coordinator->floor_->Load());
  return coordinator;
}

Status Coordinator::Initialize(const std::vector<NodeId>& nodes, uint32_t bucket_count,
                               uint32_t replication_factor, uint32_t min_in_sync) {
  SHOAL_RETURN_IF_ERROR(
      committer_->Initialize(nodes, bucket_count, replication_factor, min_in_sync));
  StartReplicaManager();
  return OkStatus();
}

void Coordinator::Start() {
  runtime_.Serve(Address::Coordinator(), shared_from_this());
  runtime_.Spawn(Address::Coordinator(), "coordinator.main",
                 [balancer = balancer_] { balancer->Run(); });
  started_ = true;
  StartReplicaManager();
}

void Coordinator::StartReplicaManager() {
  // Only a replicated map has replicas to manage (K is set by Initialize alone so far); a K = 1
  // cluster runs no extra task, which keeps the simulation's schedules as they were.
  const ShardMapPtr current = map();
  if (!started_ || current == nullptr || current->replication_factor() <= 1) return;
  if (replicas_running_.exchange(true)) return;
  runtime_.Spawn(Address::Coordinator(), "coordinator.replicas",
                 [replicas = replicas_] { replicas->Run(); });
}

transport::ClusterState Coordinator::State() const { return committer_->State(); }

ShardMapPtr Coordinator::map() const { return committer_->map(); }

MoveProgress Coordinator::progress() const { return progress_->Snapshot(); }

bool Coordinator::recovered() const { return balancer_->recovered(); }

void Coordinator::SetAutoBalance(bool enabled) { balancer_->SetAutoBalance(enabled); }

std::map<BucketId, std::vector<HeldCopies::Holder>> Coordinator::CopiesOutsideReplicas() const {
  return balancer_->CopiesOutsideReplicas();
}

Thresholds Coordinator::thresholds() const { return balancer_->thresholds(); }

uint32_t Coordinator::pending_min_in_sync() const {
  const ShardMapPtr map = committer_->map();
  if (map == nullptr) return 0;
  const std::optional<ReplicationFloor::Setting> pending = floor_->PendingOn(*map);
  return pending.has_value() ? pending->min_in_sync : 0;
}

Status Coordinator::SetThresholds(std::optional<uint64_t> split_bytes,
                                  std::optional<uint64_t> merge_bytes) {
  return balancer_->SetThresholds(split_bytes, merge_bytes);
}

void Coordinator::SetStateObserver(StateObserver observer) {
  committer_->SetObserver(std::move(observer));
}

StatusOr<bool> Coordinator::Balanced() { return balancer_->Balanced(); }

StatusOr<PlanSummary> Coordinator::Plan(std::optional<NodeId> add, std::optional<NodeId> remove) {
  // A preview of a change AddNode or RemoveNode would refuse is refused in their words.
  if (const ShardMapPtr current = map(); current != nullptr) {
    if (add.has_value()) SHOAL_RETURN_IF_ERROR(CheckJoin(*current, *add));
    if (remove.has_value()) SHOAL_RETURN_IF_ERROR(CheckLeave(*current, *remove));
  }
  return balancer_->Plan(add, remove);
}

std::set<NodeId> Coordinator::DownNodes() const {
  const ShardMapPtr map = committer_->map();
  if (map == nullptr) return {};
  return membership_->DownNodes(*map);
}

Response Coordinator::Handle(const Address& from, const transport::Request& request) {
  (void)from;
  return std::visit(
      Overloaded{
          [&](const transport::GetMapRequest&) {
            return Response::Ok(transport::GetMapResponse{.state = State()});
          },
          [&](const transport::HeartbeatRequest& r) {
            if (const uint64_t cluster = committer_->cluster_id();
                r.cluster_id != 0 && cluster != 0 && r.cluster_id != cluster) {
              return Response::Error(transport::OtherClusterError(r.cluster_id, cluster));
            }
            const ShardMapPtr current = committer_->map();
            const cluster::NodeInfo* bound =
                current == nullptr ? nullptr : current->FindNode(r.node);
            if (Status admitted =
                    membership_->AdmitStore(r.node, r.store_id, bound ? bound->store_id : 0);
                !admitted.ok()) {
              return Response::Error(admitted);
            }
            if (membership_->RecordHeartbeat(r.node)) {
              log::Info("node.up", {{"node", r.node.value()}});
            }
            replicas_->NoteHeartbeat(r);
            std::vector<transport::QuiescedBucket> released =
                resizer_->Release(r.epoch, r.quiesced);
            const ShardMapPtr map = committer_->map();
            return Response::Ok(
                transport::HeartbeatResponse{.epoch = map == nullptr ? MapEpoch(0) : map->epoch(),
                                             .released = std::move(released)});
          },
          [&](const transport::ReplicaReportRequest& r) { return replicas_->HandleReport(r); },
          [&](const transport::CreateCollectionRequest& r) {
            auto spec = CreateCollection(r.name);
            if (!spec.ok()) return Response::Error(spec.status());
            return Response::Ok(transport::CreateCollectionResponse{.collection = *spec});
          },
          [&](const auto&) {
            return Response::Error(UnimplementedError("not a coordinator request"));
          },
      },
      request);
}

StatusOr<storage::CollectionSpec> Coordinator::CreateCollection(std::string_view name) {
  return committer_->CreateCollection(name);
}

Status Coordinator::AddNode(NodeId node) {
  if (ShardMapPtr current = map(); current != nullptr) {
    SHOAL_RETURN_IF_ERROR(CheckJoin(*current, node));
  }
  // A node id with no process behind it (a typo, a node that failed to start) would be given
  // buckets nobody serves.
  SHOAL_RETURN_IF_ERROR(membership_->CheckIn(node, State(), kAddNodeGrace));
  SHOAL_RETURN_IF_ERROR(committer_
                            ->CommitEdit([&](const ShardMap& map, ShardMapEdit* edit) {
                              SHOAL_RETURN_IF_ERROR(CheckJoin(map, node));
                              edit->AddNode(node);
                              return OkStatus();
                            })
                            .status());
  membership_->AddJoining(node);
  balancer_->NoteAdminChange();
  return OkStatus();
}

Status Coordinator::RemoveNode(NodeId node) {
  SHOAL_RETURN_IF_ERROR(committer_
                            ->CommitEdit([&](const ShardMap& map, ShardMapEdit* edit) {
                              SHOAL_RETURN_IF_ERROR(CheckLeave(map, node));
                              if (map.FindNode(node)->state != cluster::NodeState::kLeaving) {
                                edit->SetNodeState(node, cluster::NodeState::kLeaving);
                              }
                              return OkStatus();
                            })
                            .status());
  balancer_->NoteAdminChange();
  return OkStatus();
}

Status Coordinator::SetReplication(uint32_t replication_factor, uint32_t min_in_sync) {
  // Refused before any bucket is held, in the operator's words; the edit checks it again
  // against the map it applies to.
  if (const ShardMapPtr current = committer_->map(); current != nullptr) {
    SHOAL_RETURN_IF_ERROR(cluster::CheckReplicationSetting(
        replication_factor, min_in_sync, static_cast<uint32_t>(current->ActiveNodes().size())));
  }
  // Hold every bucket (no new move starts), wait for the moves in flight, change K, let go.
  std::vector<BucketId> held;
  const transport::Micros deadline = runtime_.Now() + kReplicationChangeWait;
  Status status = OkStatus();
  while (true) {
    const ShardMapPtr current = committer_->map();
    if (current == nullptr) {
      status = UnavailableError("the coordinator has no map yet");
      break;
    }
    for (const auto& bucket : current->buckets()) {
      if (std::find(held.begin(), held.end(), bucket.id) == held.end() &&
          executor_->Claim(bucket.id)) {
        held.push_back(bucket.id);
      }
    }
    if (held.size() == current->buckets().size() && current->TransitionCount() == 0) {
      // The floor the buckets can meet now; one asked for above it waits for the copies.
      status = floor_->Commit(replication_factor, min_in_sync);
      // A lower K trimmed backups: their copies go while every bucket is still held, so that
      // no move can start to put a copy back on them first.
      if (status.ok()) status = DropTrimmedCopies(*executor_, *current, *committer_->map());
      if (status.code() != StatusCode::kAborted) break;  // else the loop is raising a floor
    }
    if (runtime_.Now() > deadline) {
      status = DeadlineExceededError("moves in flight did not end; K is unchanged, try again");
      break;
    }
    if (Status s = runtime_.Sleep(50'000); !s.ok()) {
      status = s;
      break;
    }
  }
  for (BucketId bucket : held) executor_->Release(bucket);
  SHOAL_RETURN_IF_ERROR(status);
  const ShardMapPtr now = committer_->map();
  log::Info("replica.set_replication", {{"replication_factor", now->replication_factor()},
                                        {"min_in_sync", now->min_in_sync()},
                                        {"pending_min_in_sync", pending_min_in_sync()},
                                        {"epoch", now->epoch().value()}});
  StartReplicaManager();
  balancer_->NoteAdminChange();
  return OkStatus();
}

Status Coordinator::ForcePrimary(BucketId bucket, NodeId node) {
  const std::map<BucketId, std::vector<HeldCopies::Holder>> held = CopiesOutsideReplicas();
  auto committed = committer_->CommitEdit([&](const ShardMap& map, ShardMapEdit* edit) {
    const auto* placement = map.Find(bucket);
    if (placement == nullptr) return NotFoundError(bucket.DebugString());
    if (!map.HasNode(node)) {
      return NotFoundError(
          fmt::format("{} is not a member of the cluster; nothing changed", node.DebugString()));
    }
    const auto holders = held.find(bucket);
    SHOAL_RETURN_IF_ERROR(CheckForceTarget(
        *placement, node,
        holders == held.end() ? std::vector<HeldCopies::Holder>{} : holders->second));
    // A bucket whose primary is up needs no forcing, and forcing it would drop its healthy
    // copies while the primary may still serve reads under its lease.
    if (!placement->replicas.empty() && !membership_->IsDown(placement->replicas.front())) {
      return FailedPreconditionError(fmt::format(
          "the primary of {} ({}) is up: force-primary is for a bucket whose primary is lost "
          "for good (`shoal status` lists the unavailable ones); nothing changed",
          bucket.DebugString(), placement->replicas.front().DebugString()));
    }
    if (placement->transition.has_value()) {
      if (cluster::IsCommitted(placement->transition->stage)) {
        return FailedPreconditionError(fmt::format(
            "{} has a committed move; it finishes on its own: try again", bucket.DebugString()));
      }
      edit->AbortTransition(bucket, placement->transition->move);
    }
    edit->ForcePrimary(bucket, node);
    return OkStatus();
  });
  SHOAL_RETURN_IF_ERROR(committed.status());
  log::Warning("replica.force_primary",
               {{"bucket", bucket.value()},
                {"node", node.value()},
                {"term", (*committed)->Find(bucket)->term.value()},
                {"note", "writes the other copies held and this one lacks are lost"}});
  balancer_->NoteAdminChange();
  return OkStatus();
}

Status Coordinator::SplitBucket(BucketId bucket, std::optional<uint64_t> at) {
  return resizer_->Split(bucket, at);
}

Status Coordinator::MergeBuckets(BucketId left, BucketId right) {
  return resizer_->Merge(left, right);
}

Status Coordinator::MoveBucket(BucketId bucket, NodeId destination, cluster::TransitionMode mode) {
  if (!executor_->Claim(bucket)) {
    return FailedPreconditionError(fmt::format("{} is moving already", bucket.DebugString()));
  }
  Status status = executor_->Run(bucket, destination, mode, /*planned_bytes=*/0);
  executor_->Release(bucket);
  return status;
}

}  // namespace shoal::coordinator
