#include "src/coordinator/replication_floor.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <string>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "src/common/log.h"

namespace shoal::coordinator {
namespace {

using cluster::ShardMap;
using cluster::ShardMapEdit;

constexpr char kFloorKey[] = "cluster/replication_floor";

std::string Encode(const std::optional<ReplicationFloor::Setting>& pending) {
  if (!pending.has_value()) return {};
  return fmt::format("{} {}", pending->replication_factor, pending->min_in_sync);
}

StatusOr<std::optional<ReplicationFloor::Setting>> Decode(std::string_view text) {
  if (text.empty()) return std::optional<ReplicationFloor::Setting>();
  ReplicationFloor::Setting out;
  const char* end = text.data() + text.size();
  auto k = std::from_chars(text.data(), end, out.replication_factor);
  if (k.ec != std::errc() || k.ptr == end || *k.ptr != ' ') {
    return InternalError(fmt::format("corrupt {}: '{}'", kFloorKey, std::string(text)));
  }
  auto min = std::from_chars(k.ptr + 1, end, out.min_in_sync);
  if (min.ec != std::errc() || min.ptr != end) {
    return InternalError(fmt::format("corrupt {}: '{}'", kFloorKey, std::string(text)));
  }
  return std::optional<ReplicationFloor::Setting>(out);
}

// The fewest copies any bucket of `map` has, capped at K.
uint32_t FewestCopies(const ShardMap& map, uint32_t replication_factor) {
  uint32_t fewest = replication_factor;
  for (const auto& bucket : map.buckets()) {
    fewest = std::min(fewest, static_cast<uint32_t>(bucket.replicas.size()));
  }
  return std::max(fewest, 1u);
}

}  // namespace

ReplicationFloor::ReplicationFloor(metadata::MetadataStore& store,
                                   std::shared_ptr<MapCommitter> committer)
    : store_(store), committer_(std::move(committer)) {}

Status ReplicationFloor::Load() {
  auto stored = store_.Get(kFloorKey);
  if (!stored.ok()) {
    return stored.status().code() == StatusCode::kNotFound ? OkStatus() : stored.status();
  }
  SHOAL_ASSIGN_OR_RETURN(std::optional<Setting> pending, Decode(stored->value));
  absl::MutexLock lock(&mu_);
  pending_ = pending;
  return OkStatus();
}

std::optional<ReplicationFloor::Setting> ReplicationFloor::pending() const {
  absl::MutexLock lock(&mu_);
  return pending_;
}

bool ReplicationFloor::Waits(const Setting& asked, const ShardMap& map) {
  return asked.replication_factor == map.replication_factor() &&
         asked.min_in_sync > map.min_in_sync();
}

std::optional<ReplicationFloor::Setting> ReplicationFloor::PendingOn(const ShardMap& map) const {
  std::optional<Setting> pending = this->pending();
  if (pending.has_value() && !Waits(*pending, map)) pending.reset();
  return pending;
}

// The floor a map edit to (K, asked) commits on `map`: the one asked for where every bucket can
// meet it, else the fewest copies a bucket will have (lowering K trims every bucket to K copies;
// raising it adds none yet).
uint32_t ReplicationFloor::FloorNow(const ShardMap& map, const Setting& asked) {
  return std::min(asked.min_in_sync, FewestCopies(map, asked.replication_factor));
}

bool ReplicationFloor::TryBegin() {
  absl::MutexLock lock(&mu_);
  if (busy_) return false;
  busy_ = true;
  return true;
}

void ReplicationFloor::End() {
  absl::MutexLock lock(&mu_);
  busy_ = false;
}

Status ReplicationFloor::Commit(uint32_t replication_factor, uint32_t min_in_sync) {
  if (!TryBegin()) return AbortedError("the replication floor is being changed");
  absl::Cleanup end = [this] { End(); };
  const Setting asked{.replication_factor = replication_factor,
                      .min_in_sync = min_in_sync == 0
                                         ? ShardMap::DefaultMinInSync(replication_factor)
                                         : min_in_sync};
  // The record goes into the edit's own metadata commit, so it is decided on the map read here;
  // an edit built on a map where the decision differs (a backup left meanwhile) is retried.
  for (int attempt = 0;; ++attempt) {
    const cluster::ShardMapPtr current = committer_->map();
    if (current == nullptr) return UnavailableError("the coordinator has no map yet");
    const uint32_t floor = FloorNow(*current, asked);
    std::optional<Setting> pending;
    if (floor < asked.min_in_sync) pending = asked;
    auto committed = committer_->CommitEdit(
        [&](const ShardMap& map, ShardMapEdit* edit) {
          if (FloorNow(map, asked) != floor) return AbortedError("the copies changed");
          edit->SetReplication(replication_factor, floor);
          return OkStatus();
        },
        std::string(kFloorKey), Encode(pending));
    if (committed.status().code() == StatusCode::kAborted && attempt < 3) continue;
    SHOAL_RETURN_IF_ERROR(committed.status());
    {
      absl::MutexLock lock(&mu_);
      pending_ = pending;
    }
    if (pending.has_value()) {
      log::Info("replica.floor_pending", {{"replication_factor", replication_factor},
                                          {"min_in_sync", floor},
                                          {"pending_min_in_sync", pending->min_in_sync}});
    }
    return OkStatus();
  }
}

Status ReplicationFloor::ApplyIfReady() {
  if (!TryBegin()) return OkStatus();
  absl::Cleanup end = [this] { End(); };
  const std::optional<Setting> pending = this->pending();
  if (!pending.has_value()) return OkStatus();
  const cluster::ShardMapPtr current = committer_->map();
  if (current == nullptr) return OkStatus();
  if (!Waits(*pending, *current)) {
    // Superseded or in force already. Every change of K or of the floor goes through Commit,
    // which rewrites the stored record in its own commit: only the memory is stale.
    absl::MutexLock lock(&mu_);
    pending_.reset();
    return OkStatus();
  }
  if (current->TransitionCount() > 0 ||
      FewestCopies(*current, pending->replication_factor) < pending->min_in_sync) {
    return OkStatus();  // not yet: copies are still being built, or a move runs
  }
  auto committed = committer_->CommitEdit(
      [&](const ShardMap& map, ShardMapEdit* edit) {
        if (map.replication_factor() != pending->replication_factor || map.TransitionCount() > 0 ||
            FewestCopies(map, pending->replication_factor) < pending->min_in_sync) {
          return AbortedError("the map changed");
        }
        edit->SetReplication(pending->replication_factor, pending->min_in_sync);
        return OkStatus();
      },
      std::string(kFloorKey), Encode(std::nullopt));
  if (committed.status().code() == StatusCode::kAborted) return OkStatus();  // the next round
  SHOAL_RETURN_IF_ERROR(committed.status());
  {
    absl::MutexLock lock(&mu_);
    pending_.reset();
  }
  log::Info("replica.floor_applied", {{"replication_factor", pending->replication_factor},
                                      {"min_in_sync", pending->min_in_sync},
                                      {"epoch", (*committed)->epoch().value()}});
  return OkStatus();
}

}  // namespace shoal::coordinator
