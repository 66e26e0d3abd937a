#include "tools/shoal/status_held.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace shoal::tools {

std::vector<HeldCopyRow> HeldCopyRows(const wire::AdminResponse& answer) {
  std::vector<HeldCopyRow> rows;
  rows.reserve(answer.held_copies_size());
  for (const wire::HeldCopyStatus& copy : answer.held_copies()) {
    rows.push_back(HeldCopyRow{.bucket = BucketId(copy.bucket()),
                               .node = NodeId(copy.node()),
                               .position = {Term(copy.term()), copy.rseq()}});
  }
  return rows;
}

std::map<NodeId, uint64_t> HeldCopiesPerNode(const std::vector<HeldCopyRow>& rows) {
  std::map<NodeId, uint64_t> counts;
  for (const HeldCopyRow& row : rows) ++counts[row.node];
  return counts;
}

std::vector<DegradedBucket> DegradedBuckets(const cluster::ShardMap& map,
                                            const std::set<NodeId>& unreachable,
                                            const std::vector<HeldCopyRow>& rows) {
  std::vector<DegradedBucket> out;
  if (map.replication_factor() <= 1) return out;
  std::map<BucketId, std::vector<HeldCopyRow>> held;
  for (const HeldCopyRow& row : rows) held[row.bucket].push_back(row);
  for (const cluster::BucketPlacement& bucket : map.buckets()) {
    DegradedBucket degraded;
    degraded.bucket = bucket.id;
    degraded.replicas = bucket.replicas;
    degraded.under_replicated = bucket.replicas.size() < map.replication_factor();
    degraded.primary_unreachable = unreachable.contains(cluster::OwnerOf(bucket));
    for (size_t i = 1; i < bucket.replicas.size(); ++i) {
      if (unreachable.contains(bucket.replicas[i])) {
        degraded.unreachable_backups.push_back(bucket.replicas[i]);
      }
    }
    const size_t reachable =
        bucket.replicas.size() - degraded.unreachable_backups.size() -
        (degraded.primary_unreachable && !bucket.replicas.empty() ? size_t{1} : size_t{0});
    degraded.below_min_in_sync = reachable < map.min_in_sync();
    if (!degraded.under_replicated && !degraded.primary_unreachable &&
        degraded.unreachable_backups.empty()) {
      continue;
    }
    if (auto it = held.find(bucket.id); it != held.end()) degraded.held = it->second;
    out.push_back(std::move(degraded));
  }
  return out;
}

nlohmann::json DegradedBucketsJson(const std::vector<DegradedBucket>& buckets) {
  nlohmann::json out = nlohmann::json::array();
  for (const DegradedBucket& bucket : buckets) {
    nlohmann::json replicas = nlohmann::json::array();
    for (NodeId node : bucket.replicas) replicas.push_back(node.value());
    nlohmann::json unreachable_backups = nlohmann::json::array();
    for (NodeId node : bucket.unreachable_backups) unreachable_backups.push_back(node.value());
    nlohmann::json held = nlohmann::json::array();
    for (const HeldCopyRow& row : bucket.held) {
      held.push_back({{"node", row.node.value()},
                      {"term", row.position.term.value()},
                      {"rseq", row.position.rseq}});
    }
    out.push_back({{"bucket", bucket.bucket.value()},
                   {"replicas", replicas},
                   {"under_replicated", bucket.under_replicated},
                   {"below_min_in_sync", bucket.below_min_in_sync},
                   {"primary_unreachable", bucket.primary_unreachable},
                   {"unreachable_backups", unreachable_backups},
                   {"held_copies", held}});
  }
  return out;
}

std::string FormatDegradedBuckets(const std::vector<DegradedBucket>& buckets,
                                  uint32_t replication_factor) {
  std::string out;
  for (const DegradedBucket& bucket : buckets) {
    std::vector<std::string> why;
    if (bucket.under_replicated) {
      why.push_back(fmt::format("{} of {} copies", bucket.replicas.size(), replication_factor));
    }
    if (!bucket.unreachable_backups.empty()) {
      std::vector<uint32_t> ids;
      for (NodeId node : bucket.unreachable_backups) ids.push_back(node.value());
      why.push_back(fmt::format("{} {} unreachable", ids.size() == 1 ? "backup" : "backups",
                                fmt::join(ids, ",")));
    }
    if (bucket.below_min_in_sync) why.emplace_back("below min_in_sync");
    if (bucket.primary_unreachable) why.emplace_back("primary unreachable");
    std::vector<uint32_t> replicas;
    for (NodeId node : bucket.replicas) replicas.push_back(node.value());
    std::vector<std::string> held;
    for (const HeldCopyRow& row : bucket.held) {
      held.push_back(fmt::format("{} (term {}, rseq {})", row.node.value(),
                                 row.position.term.value(), row.position.rseq));
    }
    out += fmt::format(
        "  bucket {}: {}; replicas {}; held by {}\n", bucket.bucket.value(), fmt::join(why, ", "),
        replicas.empty() ? std::string("none") : fmt::format("{}", fmt::join(replicas, ",")),
        held.empty() ? std::string("no other node") : fmt::format("{}", fmt::join(held, ", ")));
  }
  return out;
}

}  // namespace shoal::tools
