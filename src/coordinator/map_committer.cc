#include "src/coordinator/map_committer.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <memory>
#include <random>
#include <utility>

#include "src/cluster/shard_map_codec.h"
#include "src/common/log.h"
#include "src/storage/collection_name.h"

namespace shoal::coordinator {

using cluster::ShardMap;
using cluster::ShardMapEdit;
using cluster::ShardMapPtr;

namespace {

constexpr char kMapKey[] = "cluster/map";
constexpr char kNextMoveKey[] = "cluster/next_move";
constexpr char kCollectionPrefix[] = "cluster/collections/";
constexpr char kClusterIdKey[] = "cluster/id";

uint64_t ParseU64(std::string_view text) {
  uint64_t value = 0;
  std::from_chars(text.data(), text.data() + text.size(), value);
  return value;
}

// The stored cluster id, made (and stored) if there is none. From std::random_device, not the
// runtime's generator: the value only has to differ between clusters, and drawing from the
// runtime would shift every seeded simulation's schedule.
StatusOr<uint64_t> LoadClusterId(metadata::MetadataStore& store) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto stored = store.Get(kClusterIdKey);
    if (stored.ok()) {
      uint64_t id = 0;
      const auto [end, error] = std::from_chars(
          stored->value.data(), stored->value.data() + stored->value.size(), id, 16);
      if (error != std::errc() || id == 0) {
        return InternalError(
            fmt::format("{}: not a cluster id: {:?}", kClusterIdKey, stored->value));
      }
      return id;
    }
    if (stored.status().code() != StatusCode::kNotFound) return stored.status();
    std::random_device device;
    const uint64_t made = (uint64_t{device()} << 32 | device()) | 1;  // never 0
    auto put = store.Put(kClusterIdKey, fmt::format("{:016x}", made), metadata::kMustNotExist);
    if (put.ok()) {
      log::Info("cluster.id_created", {{"cluster", fmt::format("{:016x}", made)}});
      return made;
    }
    // Another coordinator stored one first: read it.
    if (put.status().code() != StatusCode::kFailedPrecondition) return put.status();
  }
  return UnavailableError(fmt::format("{}: neither read nor made", kClusterIdKey));
}

}  // namespace

MapCommitter::MapCommitter(transport::Runtime& runtime, metadata::MetadataStore& store,
                           std::shared_ptr<const Membership> membership,
                           transport::Micros call_timeout)
    : runtime_(runtime),
      store_(store),
      membership_(std::move(membership)),
      call_timeout_(call_timeout) {}

Status MapCommitter::Load() {
  absl::MutexLock edit_lock(&edit_mu_);
  auto map = store_.Get(kMapKey);
  ShardMapPtr loaded;
  uint64_t version = 0;
  if (map.ok()) {
    SHOAL_ASSIGN_OR_RETURN(ShardMap decoded, cluster::DecodeShardMap(map->value));
    loaded = std::make_shared<const ShardMap>(std::move(decoded));
    version = map->version;
  } else if (map.status().code() != StatusCode::kNotFound) {
    return map.status();
  }
  uint64_t next_move = 1;
  auto next = store_.Get(kNextMoveKey);
  if (next.ok()) next_move = std::max<uint64_t>(1, ParseU64(next->value));
  SHOAL_ASSIGN_OR_RETURN(const uint64_t cluster_id, LoadClusterId(store_));
  SHOAL_ASSIGN_OR_RETURN(auto stored, store_.List(kCollectionPrefix));
  std::vector<storage::CollectionSpec> collections;
  for (const auto& [key, value] : stored) {
    collections.push_back(
        storage::CollectionSpec{.id = CollectionId(static_cast<uint32_t>(ParseU64(value.value))),
                                .name = key.substr(std::string_view(kCollectionPrefix).size())});
  }
  absl::MutexLock lock(&mu_);
  map_ = std::move(loaded);
  map_version_ = version;
  next_move_ = next_move;
  collections_ = std::move(collections);
  cluster_id_ = cluster_id;
  return OkStatus();
}

Status MapCommitter::Initialize(const std::vector<NodeId>& nodes, uint32_t bucket_count,
                                uint32_t replication_factor, uint32_t min_in_sync) {
  absl::MutexLock edit_lock(&edit_mu_);
  if (map() != nullptr) return OkStatus();
  SHOAL_ASSIGN_OR_RETURN(ShardMap initial,
                         ShardMap::Initial({.nodes = nodes,
                                            .bucket_count = bucket_count,
                                            .replication_factor = replication_factor,
                                            .min_in_sync = min_in_sync}));
  SHOAL_ASSIGN_OR_RETURN(uint64_t version, store_.Put(kMapKey, cluster::EncodeShardMap(initial),
                                                      metadata::kMustNotExist));
  absl::MutexLock lock(&mu_);
  map_ = std::make_shared<const ShardMap>(std::move(initial));
  map_version_ = version;
  return OkStatus();
}

transport::ClusterState MapCommitter::State() const {
  absl::MutexLock lock(&mu_);
  return transport::ClusterState{
      .map = map_, .collections = collections_, .cluster_id = cluster_id_};
}

uint64_t MapCommitter::cluster_id() const {
  absl::MutexLock lock(&mu_);
  return cluster_id_;
}

ShardMapPtr MapCommitter::map() const {
  absl::MutexLock lock(&mu_);
  return map_;
}

MoveId MapCommitter::NextMoveId() const {
  absl::MutexLock lock(&mu_);
  return MoveId(next_move_);
}

void MapCommitter::SetObserver(StateObserver observer) {
  {
    absl::MutexLock lock(&mu_);
    observer_ = observer;
  }
  if (observer) observer(State());
}

StatusOr<storage::CollectionSpec> MapCommitter::CreateCollection(std::string_view name) {
  // Checked before anything is recorded: the name becomes a metadata key.
  SHOAL_RETURN_IF_ERROR(storage::ValidateCollectionName(name));
  ShardMapPtr map;
  storage::CollectionSpec spec;
  {
    absl::MutexLock edit_lock(&edit_mu_);
    uint32_t next = 1;
    {
      absl::MutexLock lock(&mu_);
      for (const auto& c : collections_) {
        if (c.name == name) return c;
        next = std::max(next, c.id.value() + 1);
      }
    }
    spec = storage::CollectionSpec{.id = CollectionId(next), .name = std::string(name)};
    SHOAL_RETURN_IF_ERROR(store_
                              .Put(fmt::format("{}{}", kCollectionPrefix, name),
                                   std::to_string(next), metadata::kMustNotExist)
                              .status());
    absl::MutexLock lock(&mu_);
    collections_.push_back(spec);
    map = map_;
  }
  Publish(map);
  return spec;
}

StatusOr<ShardMapPtr> MapCommitter::CommitEdit(const EditBuilder& build,
                                               std::optional<std::string> log_key,
                                               std::string log_value) {
  ShardMapPtr next;
  {
    absl::MutexLock edit_lock(&edit_mu_);
    // A reloaded map reaches the nodes with the next edit, or through their heartbeats.
    if (map_unknown_) SHOAL_RETURN_IF_ERROR(ReloadLocked());
    ShardMapPtr current = map();
    if (current == nullptr) return FailedPreconditionError("the cluster is not initialized");
    ShardMapEdit edit(current->epoch());
    SHOAL_RETURN_IF_ERROR(build(*current, &edit));
    if (edit.empty()) return current;
    SHOAL_ASSIGN_OR_RETURN(ShardMap applied, cluster::Apply(*current, edit));
    uint64_t version;
    uint64_t next_move;
    {
      absl::MutexLock lock(&mu_);
      version = map_version_;
      next_move = next_move_;
    }
    const uint64_t stored_next_move = next_move;
    std::vector<metadata::MetaOp> ops;
    ops.push_back(metadata::MetaOp::Put(kMapKey, cluster::EncodeShardMap(applied), version));
    for (const auto& op : edit.ops()) {
      if (const auto* begin = std::get_if<cluster::edit::BeginTransition>(&op)) {
        next_move = std::max(next_move, begin->move.value() + 1);
      }
    }
    if (next_move != stored_next_move) {
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
    absl::MutexLock lock(&mu_);
    map_ = next;
    ++map_version_;
    next_move_ = next_move;
  }
  Publish(next);
  return next;
}

Status MapCommitter::ReloadLocked() {
  SHOAL_ASSIGN_OR_RETURN(const metadata::Versioned stored, store_.Get(kMapKey));
  auto next = store_.Get(kNextMoveKey);
  if (!next.ok() && next.status().code() != StatusCode::kNotFound) return next.status();
  absl::MutexLock lock(&mu_);
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

void MapCommitter::Publish(const ShardMapPtr& map) {
  if (map == nullptr) return;
  const transport::ClusterState state = State();
  StateObserver observer;
  {
    absl::MutexLock lock(&mu_);
    observer = observer_;
  }
  if (observer) observer(state);
  for (const auto& node : map->nodes()) {
    if (membership_->IsDown(node.id)) continue;
    // Best effort: a node that misses it learns the epoch from its next heartbeat.
    auto r = runtime_.Call(transport::Address::Node(node.id),
                           transport::InstallMapRequest{.state = state}, call_timeout_ / 4);
    if (!r.ok() && r.status().code() == StatusCode::kCancelled) return;
  }
}

}  // namespace shoal::coordinator
