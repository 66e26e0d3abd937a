#include "src/clientside/rebalancer.h"

#include <fmt/format.h>

#include <set>
#include <thread>

#include "src/clientside/consistent_ops.h"

namespace shoal::clientside {

Rebalancer::Rebalancer(RebalancerOptions options)
    : options_(std::move(options)), keys_(options_.collection) {}

Status Rebalancer::Stopped() const {
  if (options_.stop_requested && options_.stop_requested()) {
    return CancelledError("rebalancer stopped");
  }
  return OkStatus();
}

void Rebalancer::WaitForChange() { std::this_thread::sleep_for(options_.poll); }

Status Rebalancer::Run() {
  metadata::MetadataStore& store = *options_.metadata;
  for (;;) {
    SHOAL_RETURN_IF_ERROR(Stopped());
    SHOAL_ASSIGN_OR_RETURN(VersionedState current, ReadShardingState(store, keys_));
    switch (current.state.state) {
      case ClientState::kNormal:
        return OkStatus();
      case ClientState::kEnterRebalance:
      case ClientState::kEnterCleanup:
      case ClientState::kLeaveRebalance: {
        SHOAL_ASSIGN_OR_RETURN(bool past, TryCompleteBarrier(store, keys_));
        if (!past) WaitForChange();
        break;
      }
      case ClientState::kRebalancing:
        SHOAL_RETURN_IF_ERROR(CopyPass(current.state));
        SHOAL_RETURN_IF_ERROR(Stopped());
        SHOAL_RETURN_IF_ERROR(CommitNext(store, keys_, current));
        ++stats_.transitions;
        break;
      case ClientState::kCleanup:
        SHOAL_RETURN_IF_ERROR(WaitForQueries());
        SHOAL_RETURN_IF_ERROR(RemovePass(current.state));
        SHOAL_RETURN_IF_ERROR(Stopped());
        SHOAL_RETURN_IF_ERROR(CommitNext(store, keys_, current));
        ++stats_.transitions;
        break;
    }
  }
}

// Algorithm 5, first loop: for all S_i, for all d ∈ S_i(version = v_old).
Status Rebalancer::CopyPass(const ShardingState& s) {
  for (uint32_t i = 0; i < s.span(); ++i) {
    SHOAL_ASSIGN_OR_RETURN(ShardBackend * source, options_.catalog->Get(ShardIndex(i)));
    ShardQuery q;
    q.version = s.old_version();
    q.limit = options_.page_size;
    for (;;) {
      SHOAL_ASSIGN_OR_RETURN(ShardPage page, source->Query(q));
      for (const ShardDocument& d : page.documents) {
        const ShardIndex to = ShardFor(d.primary_key, s.shards);
        SHOAL_ASSIGN_OR_RETURN(ShardBackend * target, options_.catalog->Get(to));
        SHOAL_RETURN_IF_ERROR(Stopped());
        const bool same = to == ShardIndex(i);
        SHOAL_RETURN_IF_ERROR(Prefixed(MoveDocument(*source, *target, d, s.version, same),
                                       fmt::format("moving {}", d.primary_key)));
        ++(same ? stats_.restamped : stats_.moved);
      }
      if (page.done || page.documents.empty()) break;
      q.after_key = page.documents.back().primary_key;
      q.has_after_key = true;
    }
  }
  return OkStatus();
}

// Algorithm 5: Q ← all active queries; wait while Q' ∩ Q ≠ ∅.
Status Rebalancer::WaitForQueries() {
  metadata::MetadataStore& store = *options_.metadata;
  SHOAL_ASSIGN_OR_RETURN(auto open, store.List(keys_.queries()));
  std::set<std::string> before;
  for (const auto& [key, value] : open) before.insert(key);
  while (!before.empty()) {
    SHOAL_RETURN_IF_ERROR(Stopped());
    SHOAL_ASSIGN_OR_RETURN(auto now, store.List(keys_.queries()));
    std::set<std::string> still;
    for (const auto& [key, value] : now) {
      if (before.contains(key)) still.insert(key);
    }
    before = std::move(still);
    if (!before.empty()) WaitForChange();
  }
  return OkStatus();
}

// Algorithm 5, last loop: S_i ← S_i − S_i(version = v_old) − S_i(tombstone = true).
Status Rebalancer::RemovePass(const ShardingState& s) {
  const MapVersion old_version = s.old_version();
  for (uint32_t i = 0; i < s.span(); ++i) {
    SHOAL_ASSIGN_OR_RETURN(ShardBackend * shard, options_.catalog->Get(ShardIndex(i)));
    ShardQuery q;
    q.include_tombstones = true;
    q.limit = options_.page_size;
    for (;;) {
      SHOAL_ASSIGN_OR_RETURN(ShardPage page, shard->Query(q));
      for (const ShardDocument& d : page.documents) {
        if (!d.tombstone && d.version != old_version) continue;
        SHOAL_RETURN_IF_ERROR(Stopped());
        SHOAL_RETURN_IF_ERROR(Prefixed(RemoveObsolete(*shard, d, old_version),
                                       fmt::format("removing {}", d.primary_key)));
        ++stats_.removed;
      }
      if (page.done || page.documents.empty()) break;
      q.after_key = page.documents.back().primary_key;
      q.has_after_key = true;
    }
  }
  return OkStatus();
}

}  // namespace shoal::clientside
