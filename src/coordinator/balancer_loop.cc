#include "src/coordinator/balancer_loop.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <set>
#include <vector>

#include "src/cluster/balancer.h"
#include "src/cluster/bootstrap_planner.h"
#include "src/common/log.h"
#include "src/coordinator/coordinator_internal.h"
#include "src/coordinator/executable_step.h"

namespace shoal::coordinator {
namespace {

bool Contains(const std::vector<NodeId>& nodes, NodeId node) {
  return std::find(nodes.begin(), nodes.end(), node) != nodes.end();
}

}  // namespace

using cluster::ShardMap;
using cluster::ShardMapEdit;
using cluster::ShardMapPtr;

namespace {

// The bytes a node may receive (cluster::LoadReport::node_room_bytes): half of its free space
// above the reserve. Half because a bucket's reported size is its live bytes, not its files; an
// ingested file is rewritten by compaction, with both copies on disk for a while; and the
// node's own writes go on meanwhile.
uint64_t RoomOf(const transport::DiskSpaceReport& disk) {
  return disk.free_bytes > disk.reserve_bytes ? (disk.free_bytes - disk.reserve_bytes) / 2 : 0;
}

// Stale copies dropped per round at most: a drop is one range deletion at the node, and the
// rest wait for the next round.
constexpr size_t kMaxStaleDropsPerRound = 8;

}  // namespace

BalancerLoop::BalancerLoop(transport::Runtime& runtime, metadata::MetadataStore& store,
                           std::shared_ptr<MapCommitter> committer,
                           std::shared_ptr<Membership> membership,
                           std::shared_ptr<MoveExecutor> executor, std::shared_ptr<Resizer> resizer,
                           const CoordinatorOptions& options,
                           std::shared_ptr<ReplicationFloor> floor)
    : runtime_(runtime),
      store_(store),
      committer_(std::move(committer)),
      membership_(std::move(membership)),
      executor_(std::move(executor)),
      resizer_(std::move(resizer)),
      options_(options),
      floor_(std::move(floor)),
      held_(options.stale_copy_grace),
      auto_balance_(options.auto_balance),
      thresholds_{.split_bytes = options.split_bytes, .merge_bytes = options.merge_bytes} {}

bool BalancerLoop::recovered() const {
  absl::MutexLock lock(&mu_);
  return recovered_;
}

void BalancerLoop::SetAutoBalance(bool enabled) {
  absl::MutexLock lock(&mu_);
  auto_balance_ = enabled;
}

void BalancerLoop::NoteAdminChange() {
  absl::MutexLock lock(&mu_);
  idle_at_.reset();
  ++admin_generation_;
}

uint64_t BalancerLoop::generation() const {
  absl::MutexLock lock(&mu_);
  return admin_generation_;
}

bool BalancerLoop::Balanced() const {
  const ShardMapPtr map = committer_->map();
  {
    absl::MutexLock lock(&mu_);
    if (!recovered_ || map == nullptr || idle_at_ != map->epoch()) return false;
  }
  return map->TransitionCount() == 0 && executor_->Claimed() == 0 && membership_->Joining().empty();
}

void BalancerLoop::Recover() {
  ShardMapPtr map = committer_->map();
  if (map != nullptr) {
    for (const auto& bucket : map->buckets()) {
      if (!bucket.transition.has_value()) continue;
      const auto& t = *bucket.transition;
      log::Info("move.recover", {{"move", t.move.value()},
                                 {"bucket", bucket.id.value()},
                                 {"stage", cluster::ToString(t.stage)}});
      const Status status = executor_->Resolve(bucket.id, t, "coordinator restarted");
      if (status.code() == StatusCode::kCancelled) return;
    }
  }
  absl::MutexLock lock(&mu_);
  recovered_ = true;
}

std::map<BucketId, std::vector<HeldCopies::Holder>> BalancerLoop::CopiesOutsideReplicas() const {
  ShardMapPtr map = committer_->map();
  if (map == nullptr) return {};
  return held_.Copies(*map);
}

StatusOr<cluster::LoadReport> BalancerLoop::CollectLoads() {
  cluster::LoadReport report;
  ShardMapPtr map = committer_->map();
  std::map<NodeId, uint64_t> node_bytes;
  for (const auto& node : map->nodes()) {
    if (membership_->IsDown(node.id)) continue;
    auto response = runtime_.Call(transport::Address::Node(node.id), transport::BucketLoadRequest{},
                                  options_.call_timeout);
    if (!response.ok() && response.status().code() == StatusCode::kCancelled) {
      return response.status();
    }
    if (!response.ok()) continue;
    auto body = transport::BodyAs<transport::BucketLoadResponse>(std::move(*response));
    if (!body.ok()) continue;
    for (const auto& load : body->buckets) {
      cluster::BucketLoad& bucket = report.buckets[load.bucket];
      bucket.bytes = load.bytes;
      node_bytes[node.id] += load.bytes;
      // A bucket's hits are its reads and writes, summed over the copies that report it: each
      // node's rates decay once it stops serving them, as the new primary's rise, so the sum
      // stays put across a handoff and the balancer does not pile hot buckets onto a node whose
      // rates still rise. (Backups serve no client write, and reads only in kAnyReplica.)
      bucket.hits_ema += load.reads_per_second + load.writes_per_second;
    }
    if (body->disk.has_value()) report.node_room_bytes[node.id] = RoomOf(*body->disk);
    held_.Record(node.id, body->held);
  }
  uint64_t max_bytes = 1;
  for (const auto& [node, bytes] : node_bytes) max_bytes = std::max(max_bytes, bytes);
  for (const auto& [node, bytes] : node_bytes) {
    report.node_utilization[node] = static_cast<double>(bytes) / static_cast<double>(max_bytes);
  }
  return report;
}

cluster::BalancerOptions BalancerLoop::OptionsFor(const ShardMap& map) const {
  const Thresholds thresholds = this->thresholds();
  cluster::BalancerOptions balancer{.theta_max_bytes = thresholds.split_bytes,
                                    .theta_min_bytes = thresholds.merge_bytes,
                                    .min_buckets = options_.min_buckets,
                                    .max_moves_per_node = options_.max_moves_per_node,
                                    .mode = cluster::TransitionMode::kCopyThenSwitch,
                                    .unavailable = {},
                                    .damped = {}};
  // A node that does not answer receives no copy; at K > 1 its copies are rebuilt elsewhere
  // (paper 001 §3.2 rule 2).
  for (const cluster::NodeInfo& node : map.nodes()) {
    if (membership_->IsDown(node.id)) balancer.unavailable.push_back(node.id);
  }
  // A node removed from configurations again and again gets no new copy for a while
  // (FlapDamper, docs/design/replication.md §4.1).
  balancer.damped = membership_->flaps().Damped(runtime_.Now());
  // A copy held outside a bucket's replicas may resume from the primary's log: its repair goes
  // there when it may (replication.md §6.1, "Copies outside the replicas").
  balancer.held_copies = held_.Holders(map);
  return balancer;
}

StatusOr<cluster::MigrationPlan> BalancerLoop::PlanNow(const ShardMap& map,
                                                       const cluster::LoadReport& load) {
  const cluster::BalancerOptions balancer = OptionsFor(map);
  // Two-phase bootstrap (paper 001 §3.2): a joining node first takes a small share from heavily
  // loaded nodes, then the balancer brings it to the average.
  for (NodeId node : membership_->Joining()) {
    // Taken out of the joining set whatever comes of it: planned once. A node removed before
    // its pre-bootstrap was planned has nothing to bootstrap any more.
    (void)membership_->TakeJoining(node);
    if (!map.HasNode(node)) continue;
    cluster::BootstrapOptions bootstrap;
    bootstrap.pre_bootstrap_mode = cluster::TransitionMode::kSwitchThenCopy;
    auto pre = cluster::BootstrapPlanner::PreBootstrap(map, load, node, bootstrap);
    if (pre.ok() && !pre->moves.empty()) return pre;
  }
  return cluster::Balancer::Plan(map, load, balancer);
}

Status BalancerLoop::BalanceOnce() {
  const uint64_t generation = this->generation();
  ShardMapPtr map = committer_->map();
  if (map == nullptr) return OkStatus();
  // A leaving node that holds nothing any more leaves the map.
  for (const auto& node : map->nodes()) {
    if (node.state == cluster::NodeState::kLeaving && map->TargetBucketsOf(node.id).empty() &&
        map->TransitionCountOf(node.id) == 0) {
      SHOAL_RETURN_IF_ERROR(committer_
                                ->CommitEdit([&](const ShardMap& m, ShardMapEdit* edit) {
                                  if (m.HasNode(node.id)) edit->RemoveNode(node.id);
                                  return OkStatus();
                                })
                                .status());
    }
  }
  SHOAL_ASSIGN_OR_RETURN(auto load, CollectLoads());
  map = committer_->map();
  SHOAL_ASSIGN_OR_RETURN(auto plan, PlanNow(*map, load));
  SHOAL_RETURN_IF_ERROR(DropStaleCopies());
  // A failed split or merge is planned again by a later round.
  for (const auto& split : plan.splits) (void)resizer_->Split(split.bucket, split.at);
  for (const auto& merge : plan.merges) (void)resizer_->Merge(merge.left, merge.right);
  bool idle = plan.empty();
  // The planner counts the moves the map shows. A move started by an earlier round may not have
  // written its BEGIN yet: count those too, so that max_moves_per_node holds when rounds follow
  // each other closely.
  std::map<NodeId, uint32_t> busy;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [bucket, nodes] : moves_) {
      const auto* placement = map->Find(bucket);
      if (placement == nullptr || !placement->transition.has_value()) {
        ++busy[nodes.first];
        ++busy[nodes.second];
      }
    }
  }
  const auto full = [&](NodeId node) {
    return map->TransitionCountOf(node) + busy[node] >= options_.max_moves_per_node;
  };
  LedPrimaries led = PrimariesLed(*map);
  std::set<std::pair<BucketId, NodeId>> waiting_for_space;
  for (const auto& planned : plan.moves) {
    const std::optional<cluster::MoveIntent> step = ExecutableStep(
        *map, planned, [&](NodeId node) { return membership_->IsDown(node); }, led);
    if (!step.has_value()) continue;
    const cluster::MoveIntent& intent = *step;
    const std::vector<NodeId>& target = intent.destination;
    const uint64_t bytes = intent.bytes;
    const NodeId source = intent.source.front();
    NodeId destination = target.front();  // the new primary of a handoff
    for (NodeId node : target) {
      if (!Contains(intent.source, node)) destination = node;  // the incoming copy
    }
    const cluster::TransitionMode mode = intent.mode;
    if (!Contains(intent.source, destination) && load.OutOfSpace(destination)) {
      // The node would refuse the copy (DiskSpaceGuard): the move waits for its space.
      waiting_for_space.emplace(intent.bucket, destination);
      idle = false;
      continue;
    }
    if (membership_->IsDown(destination) || membership_->IsDown(source) ||
        (busy[source] + busy[destination] > 0 && (full(source) || full(destination))) ||
        !executor_->Claim(intent.bucket, options_.max_moves_in_flight)) {
      idle = false;
      continue;
    }
    {
      absl::MutexLock lock(&mu_);
      moves_[intent.bucket] = {source, destination};
    }
    ++busy[source];
    ++busy[destination];
    TakeStep(intent, &led);
    runtime_.Spawn(transport::Address::Coordinator(),
                   fmt::format("move.{}", intent.bucket.DebugString()),
                   [self = shared_from_this(), bucket = intent.bucket, target, mode, bytes] {
                     const Status status = self->executor_->RunTo(bucket, target, mode, bytes);
                     {
                       absl::MutexLock lock(&self->mu_);
                       self->moves_.erase(bucket);
                       // After a failure the next round waits for balance_interval.
                       if (status.ok()) self->wake_ = true;
                     }
                     // Released last: a round that claims the bucket again records it anew.
                     self->executor_->Release(bucket);
                   });
  }
  const bool running = executor_->Claimed() != 0;
  absl::MutexLock lock(&mu_);
  for (const auto& [bucket, node] : waiting_for_space) {
    if (waiting_for_space_.contains({bucket, node})) continue;
    log::Warning("move.waits_for_space",
                 {{"bucket", bucket.value()},
                  {"node", node.value()},
                  {"reason",
                   "the node's free disk space is at its reserve; the copy goes once "
                   "it reports room"}});
  }
  waiting_for_space_ = std::move(waiting_for_space);
  if (idle && !running && generation == admin_generation_) {
    idle_at_ = map->epoch();  // the map this round planned on
  } else {
    idle_at_.reset();
  }
  return OkStatus();
}

Status BalancerLoop::DropStaleCopies() {
  // The newest map: a bucket that became short meanwhile keeps its copies.
  const ShardMapPtr latest = committer_->map();
  if (latest == nullptr) return OkStatus();
  const ShardMap& map = *latest;
  std::vector<HeldCopies::Stale> stale =
      held_.TakeStale(map, membership_->DownNodes(map), runtime_.Now());
  if (stale.size() > kMaxStaleDropsPerRound) stale.resize(kMaxStaleDropsPerRound);
  for (const HeldCopies::Stale& copy : stale) {
    // No move: the node refuses it if its map (at this epoch or later) shows it serving or
    // receiving the range.
    auto dropped = runtime_.Call(
        transport::Address::Node(copy.node),
        transport::DropBucketRequest{
            .epoch = map.epoch(), .move = MoveId(0), .bucket = copy.bucket, .range = copy.range},
        options_.call_timeout);
    if (!dropped.ok() && dropped.status().code() == StatusCode::kCancelled) {
      return dropped.status();
    }
    const Status status = dropped.ok() ? dropped->status : dropped.status();
    if (!status.ok()) {
      // The next round tries again if the node still reports it.
      log::Warning("copy.drop_stale_failed", {{"node", copy.node.value()},
                                              {"bucket", copy.bucket.value()},
                                              {"error", status.ToString()}});
      continue;
    }
    held_.Dropped(copy.node, copy.bucket);
    log::Info("copy.drop_stale", {{"node", copy.node.value()},
                                  {"bucket", copy.bucket.value()},
                                  {"position", copy.position.DebugString()},
                                  {"epoch", map.epoch().value()}});
  }
  return OkStatus();
}

void BalancerLoop::Run() {
  Recover();
  uint64_t generation = this->generation();
  const transport::Micros poll = options_.balance_poll > 0
                                     ? std::min(options_.balance_poll, options_.balance_interval)
                                     : options_.balance_interval;
  while (true) {
    // Wait for balance_interval, or less when a balancer move ended or an operator changed the
    // membership or the thresholds (the runtime rules allow no other wait than Sleep: poll).
    const transport::Micros deadline = runtime_.Now() + options_.balance_interval;
    while (true) {
      {
        absl::MutexLock lock(&mu_);
        if (wake_ || admin_generation_ != generation) {
          wake_ = false;
          generation = admin_generation_;
          break;
        }
      }
      const transport::Micros left = deadline - runtime_.Now();
      if (left <= 0) break;
      if (!runtime_.Sleep(std::min(left, poll)).ok()) return;
    }
    bool enabled;
    {
      absl::MutexLock lock(&mu_);
      enabled = auto_balance_;
    }
    // Also with the balancer off: a transition left behind holds its source fenced.
    if (executor_->ResolveOrphans().code() == StatusCode::kCancelled) return;
    // Also with the balancer off: copies may be rebuilt by hand (shoal replicas, move).
    if (floor_ != nullptr) {
      if (Status raised = floor_->ApplyIfReady(); !raised.ok()) {
        if (raised.code() == StatusCode::kCancelled) return;
        log::Warning("replica.floor_failed", {{"error", raised.ToString()}});
      }
    }
    if (!enabled) continue;
    if (BalanceOnce().code() == StatusCode::kCancelled) return;
  }
}

}  // namespace shoal::coordinator
