#include "src/coordinator/coordinator.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "src/cluster/balancer.h"
#include "src/cluster/bootstrap_planner.h"
#include "src/cluster/shard_map_codec.h"
#include "src/common/log.h"
#include "src/coordinator/coordinator_internal.h"
#include "src/storage/collection_name.h"

namespace shoal::coordinator {

using internal::Retryable;

using cluster::ShardMap;
using cluster::ShardMapEdit;
using cluster::ShardMapPtr;
using cluster::TransitionStage;
using transport::Address;
using transport::Response;

namespace {

constexpr char kMapKey[] = "cluster/map";
constexpr char kNextMoveKey[] = "cluster/next_move";
constexpr char kCollectionPrefix[] = "cluster/collections/";

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};

uint64_t ParseU64(std::string_view text) {
  uint64_t value = 0;
  std::from_chars(text.data(), text.data() + text.size(), value);
  return value;
}

// The bytes a node may receive (cluster::LoadReport::node_room_bytes): half of its free space
// above the reserve. Half because a bucket's reported size is its live bytes, not its files; an
// ingested file is rewritten by compaction, with both copies on disk for a while; and the
// node's own writes go on meanwhile.
uint64_t RoomOf(const transport::DiskSpaceReport& disk) {
  return disk.free_bytes > disk.reserve_bytes ? (disk.free_bytes - disk.reserve_bytes) / 2 : 0;
}

}  // namespace

Coordinator::Coordinator(transport::Runtime& runtime, metadata::MetadataStore& store,
                         const CoordinatorOptions& options)
    : runtime_(runtime),
      store_(store),
      options_(options),
      started_(runtime.Now()),
      auto_balance_(options.auto_balance),
      thresholds_{.split_bytes = options.split_bytes, .merge_bytes = options.merge_bytes} {}

StatusOr<std::shared_ptr<Coordinator>> Coordinator::Open(transport::Runtime& runtime,
                                                         metadata::MetadataStore& store,
                                                         const CoordinatorOptions& options) {
  std::shared_ptr<Coordinator> coordinator(new Coordinator(runtime, store, options));
  SHOAL_RETURN_IF_ERROR(coordinator->Load());
  return coordinator;
}

Status Coordinator::Load() {
  auto map = store_.Get(kMapKey);
  if (map.ok()) {
    SHOAL_ASSIGN_OR_RETURN(ShardMap decoded, cluster::DecodeShardMap(map->value));
    map_ = std::make_shared<const ShardMap>(std::move(decoded));
    map_version_ = map->version;
  } else if (map.status().code() != StatusCode::kNotFound) {
    return map.status();
  }
  auto next = store_.Get(kNextMoveKey);
  if (next.ok()) next_move_ = std::max<uint64_t>(1, ParseU64(next->value));
  SHOAL_RETURN_IF_ERROR(LoadThresholds());
  SHOAL_ASSIGN_OR_RETURN(auto collections, store_.List(kCollectionPrefix));
  for (const auto& [key, value] : collections) {
    collections_.push_back(
        storage::CollectionSpec{.id = CollectionId(static_cast<uint32_t>(ParseU64(value.value))),
                                .name = key.substr(std::string_view(kCollectionPrefix).size())});
  }
  return OkStatus();
}

Status Coordinator::Initialize(const std::vector<NodeId>& nodes, uint32_t bucket_count) {
  std::lock_guard<std::mutex> edit_lock(edit_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (map_ != nullptr) return OkStatus();
  }
  SHOAL_ASSIGN_OR_RETURN(ShardMap initial,
                         ShardMap::Initial({.nodes = nodes, .bucket_count = bucket_count}));
  SHOAL_ASSIGN_OR_RETURN(uint64_t version, store_.Put(kMapKey, cluster::EncodeShardMap(initial),
                                                      metadata::kMustNotExist));
  std::lock_guard<std::mutex> lock(mu_);
  map_ = std::make_shared<const ShardMap>(std::move(initial));
  map_version_ = version;
  return OkStatus();
}

void Coordinator::Start() {
  runtime_.Serve(Address::Coordinator(), shared_from_this());
  runtime_.Spawn(Address::Coordinator(), "coordinator.main", [self = shared_from_this()] {
    self->Recover();
    self->BalanceLoop();
  });
}

transport::ClusterState Coordinator::State() const {
  std::lock_guard<std::mutex> lock(mu_);
  return transport::ClusterState{.map = map_, .collections = collections_};
}

ShardMapPtr Coordinator::map() const {
  std::lock_guard<std::mutex> lock(mu_);
  return map_;
}

MoveProgress Coordinator::progress() const {
  std::lock_guard<std::mutex> lock(mu_);
  return progress_;
}

bool Coordinator::recovered() const {
  std::lock_guard<std::mutex> lock(mu_);
  return recovered_;
}

void Coordinator::SetAutoBalance(bool enabled) {
  std::lock_guard<std::mutex> lock(mu_);
  auto_balance_ = enabled;
}

bool Coordinator::IsDown(NodeId node) const {
  auto it = last_heartbeat_.find(node);
  // A node never heard from by this incarnation gets the benefit of the doubt for one timeout
  // from the coordinator's start.
  const transport::Micros seen = it == last_heartbeat_.end() ? started_ : it->second;
  return runtime_.Now() - seen > options_.node_timeout;
}

bool Coordinator::HeardFrom(NodeId node) const {
  auto it = last_heartbeat_.find(node);
  return it != last_heartbeat_.end() && runtime_.Now() - it->second <= options_.node_timeout;
}

Status Coordinator::CheckIn(NodeId node, transport::Micros grace) {
  // A node whose process is starting sends its first heartbeat (and with it its address) within
  // moments; wait up to `grace` for it, polling the heartbeat record.
  const transport::Micros give_up = runtime_.Now() + grace;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (HeardFrom(node)) return OkStatus();
    }
    if (runtime_.Now() >= give_up) break;
    SHOAL_RETURN_IF_ERROR(runtime_.Sleep(kCheckInPoll));
  }
  // No recent heartbeat: ask the node itself (it may have started a moment ago). It answers
  // with the map it now holds.
  auto answer = runtime_.Call(Address::Node(node), transport::InstallMapRequest{.state = State()},
                              options_.call_timeout);
  const Status status = answer.ok() ? answer->status : answer.status();
  if (status.code() == StatusCode::kCancelled) return status;
  if (!status.ok()) {
    return FailedPreconditionError(fmt::format(
        "{} has not checked in with the coordinator and does not answer ({}); start its process "
        "(shoal node --id {} --coordinator ...) before giving it buckets",
        node.DebugString(), status.ToString(), node.value()));
  }
  std::lock_guard<std::mutex> lock(mu_);
  last_heartbeat_[node] = runtime_.Now();
  return OkStatus();
}

std::set<NodeId> Coordinator::DownNodes() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::set<NodeId> down;
  if (map_ == nullptr) return down;
  for (const auto& node : map_->nodes()) {
    if (IsDown(node.id)) down.insert(node.id);
  }
  return down;
}

Response Coordinator::Handle(const Address& from, const transport::Request& request) {
  (void)from;
  return std::visit(
      Overloaded{
          [&](const transport::GetMapRequest&) {
            return Response::Ok(transport::GetMapResponse{.state = State()});
          },
          [&](const transport::HeartbeatRequest& r) {
            std::lock_guard<std::mutex> lock(mu_);
            if (IsDown(r.node)) log::Info("node.up", {{"node", r.node.value()}});
            last_heartbeat_[r.node] = runtime_.Now();
            return Response::Ok(transport::HeartbeatResponse{
                .epoch = map_ == nullptr ? MapEpoch(0) : map_->epoch()});
          },
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
  // Checked before anything is recorded: the name becomes a metadata key.
  SHOAL_RETURN_IF_ERROR(storage::ValidateCollectionName(name));
  ShardMapPtr map;
  storage::CollectionSpec spec;
  {
    std::lock_guard<std::mutex> edit_lock(edit_mu_);
    std::lock_guard<std::mutex> lock(mu_);
    uint32_t next = 1;
    for (const auto& c : collections_) {
      if (c.name == name) return c;
      next = std::max(next, c.id.value() + 1);
    }
    spec = storage::CollectionSpec{.id = CollectionId(next), .name = std::string(name)};
    SHOAL_RETURN_IF_ERROR(store_
                              .Put(fmt::format("{}{}", kCollectionPrefix, name),
                                   std::to_string(next), metadata::kMustNotExist)
                              .status());
    collections_.push_back(spec);
    map = map_;
  }
  Publish(map);
  return spec;
}

StatusOr<ShardMapPtr> Coordinator::CommitEdit(const EditBuilder& build,
                                              std::optional<std::string> log_key,
                                              std::string log_value) {
  ShardMapPtr next;
  {
    std::lock_guard<std::mutex> edit_lock(edit_mu_);
    // A reloaded map reaches the nodes with the next edit, or through their heartbeats.
    if (map_unknown_) SHOAL_RETURN_IF_ERROR(ReloadMap());
    ShardMapPtr current = map();
    if (current == nullptr) return FailedPreconditionError("the cluster is not initialized");
    ShardMapEdit edit(current->epoch());
    SHOAL_RETURN_IF_ERROR(build(*current, &edit));
    if (edit.empty()) return current;
    SHOAL_ASSIGN_OR_RETURN(ShardMap applied, cluster::Apply(*current, edit));
    std::vector<metadata::MetaOp> ops;
    ops.push_back(metadata::MetaOp::Put(kMapKey, cluster::EncodeShardMap(applied), map_version_));
    uint64_t next_move = next_move_;
    for (const auto& op : edit.ops()) {
      if (const auto* begin = std::get_if<cluster::edit::BeginTransition>(&op)) {
        next_move = std::max(next_move, begin->move.value() + 1);
      }
    }
    if (next_move != next_move_) {
      ops.push_back(metadata::MetaOp::Put(kNextMoveKey, std::to_string(next_move)));
    }
    if (log_key.has_value()) ops.push_back(metadata::MetaOp::Put(*log_key, log_value));
    if (Status committed = store_.Commit(ops); !committed.ok()) {
      if (committed.code() == StatusCode::kUnavailable) map_unknown_ = true;
      return committed;
    }
    if (log::Enabled(log::Level::kInfo)) {
      log::Info("map.commit", {{"epoch", applied.epoch().value()},
                               {"edit", edit.DebugString()},
                               {"record", log_key.has_value() ? log_value : std::string()}});
    }
    next = std::make_shared<const ShardMap>(std::move(applied));
    std::lock_guard<std::mutex> lock(mu_);
    map_ = next;
    ++map_version_;
    next_move_ = next_move;
  }
  Publish(next);
  return next;
}

Status Coordinator::ReloadMap() {
  SHOAL_ASSIGN_OR_RETURN(const metadata::Versioned stored, store_.Get(kMapKey));
  auto next = store_.Get(kNextMoveKey);
  if (!next.ok() && next.status().code() != StatusCode::kNotFound) return next.status();
  std::lock_guard<std::mutex> lock(mu_);
  if (next.ok()) next_move_ = std::max(next_move_, ParseU64(next->value));
  if (stored.version != map_version_) {
    SHOAL_ASSIGN_OR_RETURN(ShardMap decoded, cluster::DecodeShardMap(stored.value));
    log::Warning("map.reload", {{"epoch", decoded.epoch().value()}, {"version", stored.version}});
    map_ = std::make_shared<const ShardMap>(std::move(decoded));
    map_version_ = stored.version;
  }
  map_unknown_ = false;
  return OkStatus();
}

void Coordinator::Publish(const ShardMapPtr& map) {
  if (map == nullptr) return;
  const transport::ClusterState state = State();
  StateObserver observer;
  {
    std::lock_guard<std::mutex> lock(mu_);
    observer = observer_;
  }
  if (observer) observer(state);
  for (const auto& node : map->nodes()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (IsDown(node.id)) continue;
    }
    // Best effort: a node that misses it learns the epoch from its next heartbeat.
    auto r = runtime_.Call(Address::Node(node.id), transport::InstallMapRequest{.state = state},
                           options_.call_timeout / 4);
    if (!r.ok() && r.status().code() == StatusCode::kCancelled) return;
  }
}

StatusOr<Response> Coordinator::CallNode(NodeId node, transport::Request request, int attempts,
                                         transport::Micros timeout) {
  if (timeout <= 0) timeout = options_.call_timeout;
  Status last;
  for (int attempt = 0; attempt < attempts; ++attempt) {
    auto response = runtime_.Call(Address::Node(node), request, timeout);
    if (response.ok() && !Retryable(response->status)) return response;
    last = response.ok() ? response->status : response.status();
    if (last.code() == StatusCode::kCancelled) return last;
    if (!Retryable(last)) return last;
    SHOAL_RETURN_IF_ERROR(runtime_.Sleep(options_.retry_backoff << attempt));
  }
  return last;
}

Status Coordinator::AddNode(NodeId node) {
  if (ShardMapPtr current = map(); current != nullptr && current->HasNode(node)) {
    return AlreadyExistsError(fmt::format("{} is a member already", node.DebugString()));
  }
  // A node id with no process behind it (a typo, a node that failed to start) would be given
  // buckets nobody serves.
  SHOAL_RETURN_IF_ERROR(CheckIn(node, kAddNodeGrace));
  SHOAL_RETURN_IF_ERROR(CommitEdit([&](const ShardMap& map, ShardMapEdit* edit) {
                          if (map.HasNode(node)) {
                            return AlreadyExistsError(
                                fmt::format("{} is a member already", node.DebugString()));
                          }
                          edit->AddNode(node);
                          return OkStatus();
                        }).status());
  std::lock_guard<std::mutex> lock(mu_);
  joining_.insert(node);
  planner_idle_at_.reset();
  ++admin_generation_;
  return OkStatus();
}

Status Coordinator::RemoveNode(NodeId node) {
  SHOAL_RETURN_IF_ERROR(
      CommitEdit([&](const ShardMap& map, ShardMapEdit* edit) {
        const auto* info = map.FindNode(node);
        if (info == nullptr) {
          return NotFoundError(fmt::format("{} is not a member", node.DebugString()));
        }
        if (map.ActiveNodes().size() <= 1 && info->state == cluster::NodeState::kActive) {
          return FailedPreconditionError("cannot remove the last active node");
        }
        if (info->state != cluster::NodeState::kLeaving) {
          edit->SetNodeState(node, cluster::NodeState::kLeaving);
        }
        return OkStatus();
      }).status());
  std::lock_guard<std::mutex> lock(mu_);
  planner_idle_at_.reset();
  ++admin_generation_;
  return OkStatus();
}

Status Coordinator::SplitBucket(BucketId bucket, std::optional<uint64_t> at) {
  return CommitEdit([&](const ShardMap& map, ShardMapEdit* edit) {
           const auto* placement = map.Find(bucket);
           if (placement == nullptr) return NotFoundError(bucket.DebugString());
           edit->SplitBucket(bucket, at.value_or(placement->range.Midpoint()), map.NextBucketId());
           return OkStatus();
         })
      .status();
}

Status Coordinator::MergeBuckets(BucketId left, BucketId right) {
  return CommitEdit([&](const ShardMap&, ShardMapEdit* edit) {
           edit->MergeBuckets(left, right);
           return OkStatus();
         })
      .status();
}

Status Coordinator::MoveBucket(BucketId bucket, NodeId destination, cluster::TransitionMode mode) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!moving_.insert(bucket).second) {
      return FailedPreconditionError(fmt::format("{} is moving already", bucket.DebugString()));
    }
  }
  Status status = RunMove(bucket, destination, mode, /*planned_bytes=*/0);
  std::lock_guard<std::mutex> lock(mu_);
  moving_.erase(bucket);
  return status;
}

Status Coordinator::Resolve(BucketId bucket, const cluster::BucketTransition& transition,
                            std::string_view why) {
  if (cluster::IsCommitted(transition.stage)) return FinishCommitted(bucket, transition.move);
  if (cluster::AbortsOnFailure(transition.stage, transition.mode)) {
    return AbortMove(bucket, transition.move, AbortedError(why));
  }
  return RollForwardSwitched(bucket, transition.move, std::nullopt);  // switched: no way back
}

void Coordinator::Recover() {
  ShardMapPtr map = this->map();
  if (map != nullptr) {
    for (const auto& bucket : map->buckets()) {
      if (!bucket.transition.has_value()) continue;
      const auto& t = *bucket.transition;
      log::Info("move.recover", {{"move", t.move.value()},
                                 {"bucket", bucket.id.value()},
                                 {"stage", cluster::ToString(t.stage)}});
      if (Resolve(bucket.id, t, "coordinator restarted").code() == StatusCode::kCancelled) return;
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  recovered_ = true;
}

Status Coordinator::ResolveOrphans() {
  const ShardMapPtr map = this->map();
  if (map == nullptr) return OkStatus();
  for (const auto& bucket : map->buckets()) {
    if (!bucket.transition.has_value()) continue;
    {
      std::lock_guard<std::mutex> lock(mu_);
      // A task of this incarnation runs it: not an orphan.
      if (!moving_.insert(bucket.id).second) continue;
    }
    const auto& t = *bucket.transition;
    log::Info("move.orphan", {{"move", t.move.value()},
                              {"bucket", bucket.id.value()},
                              {"stage", cluster::ToString(t.stage)}});
    const Status status = Resolve(bucket.id, t, "the move's task ended before the move");
    {
      std::lock_guard<std::mutex> lock(mu_);
      moving_.erase(bucket.id);
    }
    if (status.code() == StatusCode::kCancelled) return status;
  }
  return OkStatus();
}

StatusOr<cluster::LoadReport> Coordinator::CollectLoads() {
  cluster::LoadReport report;
  ShardMapPtr map = this->map();
  std::map<NodeId, uint64_t> node_bytes;
  for (const auto& node : map->nodes()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (IsDown(node.id)) continue;
    }
    auto response = runtime_.Call(Address::Node(node.id), transport::BucketLoadRequest{},
                                  options_.call_timeout);
    if (!response.ok() && response.status().code() == StatusCode::kCancelled) {
      return response.status();
    }
    if (!response.ok()) continue;
    auto body = transport::BodyAs<transport::BucketLoadResponse>(std::move(*response));
    if (!body.ok()) continue;
    for (const auto& load : body->buckets) {
      report.buckets[load.bucket].bytes = load.bytes;
      node_bytes[node.id] += load.bytes;
    }
    if (body->disk.has_value()) report.node_room_bytes[node.id] = RoomOf(*body->disk);
  }
  uint64_t max_bytes = 1;
  for (const auto& [node, bytes] : node_bytes) max_bytes = std::max(max_bytes, bytes);
  for (const auto& [node, bytes] : node_bytes) {
    report.node_utilization[node] = static_cast<double>(bytes) / static_cast<double>(max_bytes);
  }
  return report;
}

StatusOr<cluster::MigrationPlan> Coordinator::PlanNow(const ShardMap& map,
                                                      const cluster::LoadReport& load) {
  const Thresholds thresholds = this->thresholds();
  cluster::BalancerOptions balancer{.theta_max_bytes = thresholds.split_bytes,
                                    .theta_min_bytes = thresholds.merge_bytes,
                                    .max_moves_per_node = options_.max_moves_per_node,
                                    .mode = cluster::TransitionMode::kCopyThenSwitch};
  std::set<NodeId> joining;
  {
    std::lock_guard<std::mutex> lock(mu_);
    joining = joining_;
  }
  // Two-phase bootstrap (paper 001 §3.2): a joining node first takes a small share from heavily
  // loaded nodes, then the balancer brings it to the average.
  for (NodeId node : joining) {
    if (!map.HasNode(node)) {
      // Removed before its pre-bootstrap was planned: nothing to bootstrap any more.
      std::lock_guard<std::mutex> lock(mu_);
      joining_.erase(node);
      continue;
    }
    cluster::BootstrapOptions bootstrap;
    bootstrap.pre_bootstrap_mode = cluster::TransitionMode::kSwitchThenCopy;
    auto pre = cluster::BootstrapPlanner::PreBootstrap(map, load, node, bootstrap);
    std::lock_guard<std::mutex> lock(mu_);
    joining_.erase(node);
    if (pre.ok() && !pre->moves.empty()) return pre;
  }
  return cluster::Balancer::Plan(map, load, balancer);
}

StatusOr<bool> Coordinator::Balanced() {
  std::lock_guard<std::mutex> lock(mu_);
  return recovered_ && map_ != nullptr && planner_idle_at_ == map_->epoch() &&
         map_->TransitionCount() == 0 && moving_.empty() && joining_.empty();
}

Status Coordinator::BalanceOnce() {
  uint64_t generation;
  {
    std::lock_guard<std::mutex> lock(mu_);
    generation = admin_generation_;
  }
  ShardMapPtr map = this->map();
  if (map == nullptr) return OkStatus();
  // A leaving node that holds nothing any more leaves the map.
  for (const auto& node : map->nodes()) {
    if (node.state == cluster::NodeState::kLeaving && map->TargetBucketsOf(node.id).empty() &&
        map->TransitionCountOf(node.id) == 0) {
      SHOAL_RETURN_IF_ERROR(CommitEdit([&](const ShardMap& m, ShardMapEdit* edit) {
                              if (m.HasNode(node.id)) edit->RemoveNode(node.id);
                              return OkStatus();
                            }).status());
    }
  }
  SHOAL_ASSIGN_OR_RETURN(auto load, CollectLoads());
  map = this->map();
  SHOAL_ASSIGN_OR_RETURN(auto plan, PlanNow(*map, load));
  for (const auto& split : plan.splits) (void)SplitBucket(split.bucket, split.at);
  for (const auto& merge : plan.merges) (void)MergeBuckets(merge.left, merge.right);
  bool idle = plan.empty();
  // The planner counts the moves the map shows. A move started by an earlier round may not have
  // written its BEGIN yet: count those too, so that max_moves_per_node holds when rounds follow
  // each other closely.
  std::map<NodeId, uint32_t> busy;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [bucket, nodes] : balancer_moves_) {
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
  for (const auto& intent : plan.moves) {
    const NodeId source = intent.source.front();
    const NodeId destination = intent.destination.front();
    const cluster::TransitionMode mode = intent.mode;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (moving_.size() >= options_.max_moves_in_flight || moving_.count(intent.bucket) != 0 ||
          IsDown(destination) || IsDown(source) ||
          (busy[source] + busy[destination] > 0 && (full(source) || full(destination)))) {
        idle = false;
        continue;
      }
      moving_.insert(intent.bucket);
      balancer_moves_[intent.bucket] = {source, destination};
    }
    ++busy[source];
    ++busy[destination];
    runtime_.Spawn(Address::Coordinator(), fmt::format("move.{}", intent.bucket.DebugString()),
                   [self = shared_from_this(), bucket = intent.bucket, destination, mode,
                    bytes = intent.bytes] {
                     const Status status = self->RunMove(bucket, destination, mode, bytes);
                     std::lock_guard<std::mutex> lock(self->mu_);
                     self->moving_.erase(bucket);
                     self->balancer_moves_.erase(bucket);
                     // After a failure the next round waits for balance_interval.
                     if (status.ok()) self->balance_wake_ = true;
                   });
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (idle && moving_.empty() && generation == admin_generation_) {
    planner_idle_at_ = map->epoch();  // the map this round planned on
  } else {
    planner_idle_at_.reset();
  }
  return OkStatus();
}

void Coordinator::BalanceLoop() {
  uint64_t generation;
  {
    std::lock_guard<std::mutex> lock(mu_);
    generation = admin_generation_;
  }
  const transport::Micros poll = options_.balance_poll > 0
                                     ? std::min(options_.balance_poll, options_.balance_interval)
                                     : options_.balance_interval;
  while (true) {
    // Wait for balance_interval, or less when a balancer move ended or a node was added or
    // removed (the runtime rules allow no other wait than Sleep: poll).
    const transport::Micros deadline = runtime_.Now() + options_.balance_interval;
    while (true) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (balance_wake_ || admin_generation_ != generation) {
          balance_wake_ = false;
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
      std::lock_guard<std::mutex> lock(mu_);
      enabled = auto_balance_;
    }
    // Also with the balancer off: a transition left behind holds its source fenced.
    if (ResolveOrphans().code() == StatusCode::kCancelled) return;
    if (!enabled) continue;
    Status status = BalanceOnce();
    if (status.code() == StatusCode::kCancelled) return;
  }
}

}  // namespace shoal::coordinator
