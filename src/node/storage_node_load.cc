// A storage node's load reports for the coordinator's balancer (docs/design/cluster.md,
// "Storage node"): bucket sizes, cached between reports, and the copies the node holds outside
// a bucket's replicas (docs/design/replication.md §6.1, "Copies outside the replicas"); the
// heartbeat loop that sends them is in storage_node.cc.

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "src/node/node_ranges.h"
#include "src/node/storage_node.h"

namespace shoal::node {

using cluster::BucketPlacement;
using transport::Response;

namespace {

// Whether `store` holds any entry of `range`, a tombstone included (one seek). A failed read
// counts as none: the copy is reported at the next load request.
bool HoldsData(const storage::BucketStore& store, const storage::PointRange& range) {
  storage::ScanOptions scan;
  scan.range = range;
  scan.include_tombstones = true;
  scan.max_documents = 1;
  scan.max_examined = 1;
  auto page = store.Scan(scan);
  return page.ok() && page->examined > 0;
}

// The copies `store` holds of the buckets its node's map does not list it for (`unassigned`):
// first those with a stored position, then those with data but no position (position 0: left by
// an aborted move whose drop did not arrive, or by a split or merge), which can never be resumed
// and which the coordinator only drops.
std::vector<transport::HeldCopy> HeldCopies(
    const storage::BucketStore& store,
    const std::vector<std::pair<BucketId, storage::PointRange>>& unassigned) {
  // A stored state vouches for the data of the bucket's range (RESUMED COPY in
  // storage_node_resume.cc); the range is the one this node's map gives the bucket, which the
  // coordinator compares with its own.
  std::vector<transport::HeldCopy> held;
  std::vector<std::pair<BucketId, storage::PointRange>> without_position;
  for (const auto& [id, range] : unassigned) {
    if (held.size() == transport::kMaxHeldCopies) return held;
    const storage::ReplicaState state = store.GetReplicaState(id);
    if (state.position.rseq == 0) {
      without_position.emplace_back(id, range);
      continue;
    }
    held.push_back(transport::HeldCopy{.bucket = id, .range = range, .position = state.position});
  }
  for (const auto& [id, range] : without_position) {
    if (held.size() == transport::kMaxHeldCopies) break;
    if (!HoldsData(store, range)) continue;
    held.push_back(transport::HeldCopy{.bucket = id, .range = range, .position = {}});
  }
  return held;
}

}  // namespace

Response StorageNode::HandleLoad() {
  // The buckets are chosen under mu_; sizing them (an exact scan by default) runs outside it, so
  // reads, writes and map installs go on meanwhile.
  std::vector<std::pair<BucketId, storage::PointRange>> served;
  std::vector<BucketId> adding;
  std::vector<std::pair<BucketId, storage::PointRange>> unassigned;  // of a replicated map
  {
    absl::MutexLock lock(&mu_);
    if (map_ != nullptr) {
      const bool replicated = map_->replication_factor() > 1;
      for (const BucketPlacement& bucket : map_->buckets()) {
        const LocalRole role = RoleLocked(bucket);
        if (role == LocalRole::kAdding) adding.push_back(bucket.id);
        if (role == LocalRole::kNotAssigned && replicated) {
          unassigned.emplace_back(bucket.id, ToPointRange(bucket.range));
        }
        const bool committed_away = role == LocalRole::kLeaving && bucket.transition.has_value() &&
                                    cluster::IsCommitted(bucket.transition->stage);
        if ((role == LocalRole::kReadWrite || role == LocalRole::kLeaving) && !committed_away) {
          served.emplace_back(bucket.id, ToPointRange(bucket.range));
        }
      }
    }
  }
  transport::BucketLoadResponse out;
  out.hot_keys = HotKeys();
  out.held = HeldCopies(*store_, unassigned);
  // A fresh reading: the balancer plans on it (docs/design/cluster.md, "Free space").
  storage::DiskSpaceGuard& disk = store_->disk_space();
  if (auto free = disk.ReadFreeBytes(); free.ok()) {
    out.disk =
        transport::DiskSpaceReport{.free_bytes = *free, .reserve_bytes = disk.reserve_bytes()};
  }
  if (options_.exact_load_stats) {
    out.buckets = ExactLoads(served, adding);
  } else {
    for (const auto& [id, range] : served) {
      auto stats = store_->EstimateStats(range);
      if (!stats.ok()) continue;
      out.buckets.push_back(transport::BucketLoad{
          .bucket = id, .bytes = stats->live_bytes, .documents = stats->documents});
    }
  }
  AddRequestRates(served, &out.buckets);
  return Response::Ok(out);
}

std::vector<transport::BucketLoad> StorageNode::ExactLoads(
    const std::vector<std::pair<BucketId, storage::PointRange>>& served,
    const std::vector<BucketId>& adding) {
  const transport::Micros now = runtime_.Now();
  const transport::Micros max_age = options_.load_stats_max_age;
  // How much of a bucket's live size the writes since its scan changed (storage::BucketStore::
  // LiveBytesChurn), read before any scan so that a write racing a scan is counted again later.
  std::vector<uint64_t> churn(served.size());
  for (size_t i = 0; i < served.size(); ++i) churn[i] = store_->LiveBytesChurn(served[i].second);
  // Which buckets to scan: every bucket without a cached size of its current range; of the
  // others, those whose writes since changed an eighth of the cached size, or a 64th once the
  // cached size is older than max_age; the stale ones oldest first, at most an eighth of the
  // served buckets per report. Overwrites that keep a document's size change nothing, so a
  // steady update load causes no rescans.
  std::vector<size_t> scan;
  {
    absl::MutexLock lock(&load_mu_);
    absl::flat_hash_set<BucketId> ids;
    for (const auto& [id, range] : served) ids.insert(id);
    ids.insert(adding.begin(), adding.end());
    for (auto it = load_cache_.begin(); it != load_cache_.end();) {
      if (ids.contains(it->first)) {
        ++it;
      } else {
        load_cache_.erase(it++);
      }
    }
    std::vector<std::pair<transport::Micros, size_t>> stale;  // (computed, index in served)
    for (size_t i = 0; i < served.size(); ++i) {
      auto it = load_cache_.find(served[i].first);
      if (it == load_cache_.end() || it->second.range != served[i].second) {
        scan.push_back(i);
        continue;
      }
      if (max_age <= 0) {
        scan.push_back(i);
        continue;
      }
      const CachedLoad& cached = it->second;
      const uint64_t changed = churn[i] - cached.churn;
      const bool old = now - cached.computed >= max_age;
      if (changed > 0 &&
          changed >= (old ? cached.bytes / 64 : std::max<uint64_t>(1, cached.bytes / 8))) {
        stale.emplace_back(cached.computed, i);
      }
    }
    std::sort(stale.begin(), stale.end());
    const size_t budget = std::max<size_t>(1, served.size() / 8);
    for (size_t k = 0; k < stale.size() && k < budget; ++k) scan.push_back(stale[k].second);
  }
  // The scans run without any lock.
  std::vector<std::pair<size_t, storage::BucketStats>> scanned;
  for (size_t i : scan) {
    auto stats = store_->ComputeStats(served[i].second);
    if (stats.ok()) scanned.emplace_back(i, *stats);
  }
  {
    absl::MutexLock lock(&mu_);
    counters_.load_scans += scan.size();
  }
  std::vector<transport::BucketLoad> loads;
  absl::MutexLock lock(&load_mu_);
  for (const auto& [i, stats] : scanned) {
    load_cache_[served[i].first] = CachedLoad{.range = served[i].second,
                                              .bytes = stats.live_bytes,
                                              .documents = stats.documents,
                                              .churn = churn[i],
                                              .computed = now};
  }
  for (const auto& [id, range] : served) {
    auto it = load_cache_.find(id);
    if (it == load_cache_.end() || it->second.range != range) continue;
    loads.push_back(transport::BucketLoad{
        .bucket = id, .bytes = it->second.bytes, .documents = it->second.documents});
  }
  return loads;
}

void StorageNode::AddRequestRates(
    const std::vector<std::pair<BucketId, storage::PointRange>>& served,
    std::vector<transport::BucketLoad>* loads) {
  absl::flat_hash_set<BucketId> ids;
  for (const auto& [id, range] : served) ids.insert(id);
  absl::MutexLock lock(&mu_);
  const transport::Micros now = runtime_.Now();
  read_rates_.Fold(now, ids);
  write_rates_.Fold(now, ids);
  for (transport::BucketLoad& load : *loads) {
    load.reads_per_second = read_rates_.PerSecond(load.bucket);
    load.writes_per_second = write_rates_.PerSecond(load.bucket);
  }
}

void StorageNode::SeedLoad(BucketId bucket, const storage::PointRange& range,
                           const storage::ExportedRange& exported, uint64_t churn) {
  absl::MutexLock lock(&load_mu_);
  // Entries but no live part: tombstones only, or an export from a binary that did not count
  // its live part (the fields read as 0 on the wire). Either way the next report scans.
  if (exported.entries > 0 && exported.live_documents == 0) {
    load_cache_.erase(bucket);
    return;
  }
  load_cache_[bucket] = CachedLoad{.range = range,
                                   .bytes = exported.live_bytes,
                                   .documents = exported.live_documents,
                                   .churn = churn,
                                   .computed = runtime_.Now()};
}

void StorageNode::ForgetLoad(BucketId bucket) {
  absl::MutexLock lock(&load_mu_);
  load_cache_.erase(bucket);
}

}  // namespace shoal::node
