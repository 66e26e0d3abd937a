#include "src/node/replication_log.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace shoal::node {

uint64_t ReplicationLog::WatermarkOf(const Bucket& b) {
  uint64_t mark = b.synced;
  for (const auto& [backup, rseq] : b.acked) mark = std::min(mark, rseq);
  return std::min(mark, b.ordered);
}

void ReplicationLog::Advance(Bucket& b) {
  const uint64_t mark = WatermarkOf(b);
  // Abandoned writes stay abandoned: they were answered "unknown" and may be gone elsewhere.
  if (mark > b.committed && b.abandoned_through <= b.committed) b.committed = mark;
}

void ReplicationLog::Configure(BucketId bucket, const std::vector<NodeId>& backups,
                               uint64_t ordered_rseq, uint64_t joined_rseq) {
  absl::MutexLock lock(&mu_);
  forgotten_committed_.erase(bucket);
  auto [it, added] = buckets_.try_emplace(bucket);
  Bucket& b = it->second;
  if (added) {
    b.ordered = ordered_rseq;
    b.synced = ordered_rseq;
    b.committed = ordered_rseq;
  }
  std::map<NodeId, uint64_t> acked;
  for (NodeId backup : backups) {
    auto known = b.acked.find(backup);
    acked[backup] = known != b.acked.end() ? known->second : joined_rseq;
  }
  b.acked = std::move(acked);
  std::map<NodeId, int64_t> renewed;
  for (NodeId backup : backups) {
    if (auto known = b.renewed.find(backup); known != b.renewed.end()) {
      renewed.emplace(backup, known->second);
    }
  }
  b.renewed = std::move(renewed);
  if (b.excused.has_value() && !b.acked.contains(*b.excused)) b.excused.reset();
  Advance(b);
  WakeDecidedLocked(bucket);
}

void ReplicationLog::Excuse(BucketId bucket, std::optional<NodeId> backup) {
  absl::MutexLock lock(&mu_);
  auto it = buckets_.find(bucket);
  if (it == buckets_.end()) return;
  if (backup.has_value() && !it->second.acked.contains(*backup)) return;
  it->second.excused = backup;
}

void ReplicationLog::Forget(BucketId bucket) {
  absl::MutexLock lock(&mu_);
  auto it = buckets_.find(bucket);
  if (it == buckets_.end()) return;
  forgotten_committed_[bucket] = it->second.committed;
  buckets_.erase(it);
  WakeDecidedLocked(bucket);
}

void ReplicationLog::Ordered(BucketId bucket, uint64_t rseq) {
  absl::MutexLock lock(&mu_);
  auto it = buckets_.find(bucket);
  if (it == buckets_.end()) return;
  it->second.ordered = std::max(it->second.ordered, rseq);
}

void ReplicationLog::LocalSynced(BucketId bucket, uint64_t rseq) {
  absl::MutexLock lock(&mu_);
  auto it = buckets_.find(bucket);
  if (it == buckets_.end()) return;
  it->second.synced = std::max(it->second.synced, rseq);
  Advance(it->second);
  WakeDecidedLocked(bucket);
}

void ReplicationLog::Acked(BucketId bucket, NodeId backup, uint64_t rseq) {
  absl::MutexLock lock(&mu_);
  auto it = buckets_.find(bucket);
  if (it == buckets_.end()) return;
  auto at = it->second.acked.find(backup);
  if (at == it->second.acked.end()) return;
  at->second = std::max(at->second, rseq);
  Advance(it->second);
  WakeDecidedLocked(bucket);
}

void ReplicationLog::Abandon(BucketId bucket) {
  absl::MutexLock lock(&mu_);
  auto it = buckets_.find(bucket);
  if (it == buckets_.end()) return;
  it->second.abandoned_through = std::max(it->second.abandoned_through, it->second.ordered);
  WakeDecidedLocked(bucket);
}

void ReplicationLog::Renewed(BucketId bucket, NodeId backup, int64_t sent_at) {
  absl::MutexLock lock(&mu_);
  auto it = buckets_.find(bucket);
  if (it == buckets_.end() || !it->second.acked.contains(backup)) return;
  auto [at, added] = it->second.renewed.try_emplace(backup, sent_at);
  if (!added) at->second = std::max(at->second, sent_at);
}

std::optional<int64_t> ReplicationLog::LeaseFrom(BucketId bucket,
                                                 std::optional<int64_t> coordinator) const {
  absl::MutexLock lock(&mu_);
  auto it = buckets_.find(bucket);
  if (it == buckets_.end()) return std::nullopt;
  const Bucket& b = it->second;
  int64_t from = INT64_MAX;
  for (const auto& [backup, rseq] : b.acked) {
    if (b.excused == backup) continue;
    auto renewed = b.renewed.find(backup);
    if (renewed == b.renewed.end()) return std::nullopt;
    from = std::min(from, renewed->second);
  }
  if (b.excused.has_value()) {
    if (!coordinator.has_value()) return std::nullopt;
    from = std::min(from, *coordinator);
  }
  return from;
}

WriteState ReplicationLog::StateOf(BucketId bucket, uint64_t rseq) const {
  absl::MutexLock lock(&mu_);
  return StateOfLocked(bucket, rseq);
}

void ReplicationLog::Watch(BucketId bucket, uint64_t rseq,
                           std::shared_ptr<transport::Wakeup> wakeup) {
  absl::MutexLock lock(&mu_);
  if (StateOfLocked(bucket, rseq) != WriteState::kPending) wakeup->Set();
  watchers_[bucket].push_back(Watcher{.rseq = rseq, .wakeup = std::move(wakeup)});
}

void ReplicationLog::Unwatch(BucketId bucket, const transport::Wakeup* wakeup) {
  absl::MutexLock lock(&mu_);
  auto it = watchers_.find(bucket);
  if (it == watchers_.end()) return;
  std::erase_if(it->second, [&](const Watcher& w) { return w.wakeup.get() == wakeup; });
  if (it->second.empty()) watchers_.erase(it);
}

void ReplicationLog::WakeDecidedLocked(BucketId bucket) {
  auto it = watchers_.find(bucket);
  if (it == watchers_.end()) return;
  for (const Watcher& w : it->second) {
    if (StateOfLocked(bucket, w.rseq) != WriteState::kPending) w.wakeup->Set();
  }
}

WriteState ReplicationLog::StateOfLocked(BucketId bucket, uint64_t rseq) const {
  auto it = buckets_.find(bucket);
  if (it == buckets_.end()) {
    auto committed = forgotten_committed_.find(bucket);
    if (committed != forgotten_committed_.end() && rseq <= committed->second) {
      return WriteState::kCommitted;
    }
    return WriteState::kAbandoned;
  }
  const Bucket& b = it->second;
  if (rseq <= b.committed) return WriteState::kCommitted;
  if (rseq <= b.abandoned_through) return WriteState::kAbandoned;
  return WriteState::kPending;
}

uint64_t ReplicationLog::OrderedRseq(BucketId bucket) const {
  absl::MutexLock lock(&mu_);
  auto it = buckets_.find(bucket);
  return it == buckets_.end() ? 0 : it->second.ordered;
}

uint64_t ReplicationLog::Watermark(BucketId bucket) const {
  absl::MutexLock lock(&mu_);
  auto it = buckets_.find(bucket);
  return it == buckets_.end() ? 0 : it->second.committed;
}

std::vector<NodeId> ReplicationLog::Lagging(BucketId bucket, uint64_t rseq) const {
  absl::MutexLock lock(&mu_);
  std::vector<NodeId> lagging;
  auto it = buckets_.find(bucket);
  if (it == buckets_.end()) return lagging;
  for (const auto& [backup, acked] : it->second.acked) {
    if (acked < rseq) lagging.push_back(backup);
  }
  return lagging;
}

bool ReplicationLog::Tracks(BucketId bucket) const {
  absl::MutexLock lock(&mu_);
  return buckets_.contains(bucket);
}

std::string ReplicationLog::DebugString(BucketId bucket) const {
  absl::MutexLock lock(&mu_);
  auto it = buckets_.find(bucket);
  if (it == buckets_.end()) return fmt::format("{} untracked", bucket.DebugString());
  const Bucket& b = it->second;
  std::vector<std::string> acked;
  for (const auto& [backup, rseq] : b.acked) {
    acked.push_back(fmt::format("{}:{}", backup.DebugString(), rseq));
  }
  return fmt::format("{} ordered={} synced={} committed={} abandoned<={} acked=[{}]",
                     bucket.DebugString(), b.ordered, b.synced, b.committed, b.abandoned_through,
                     fmt::join(acked, ","));
}

}  // namespace shoal::node
