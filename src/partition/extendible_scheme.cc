#include "src/partition/extendible_scheme.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>
#include <utility>

#include "src/partition/balance.h"
#include "src/partition/schemes.h"
#include "src/partition/sized_scheme_util.h"

namespace shoal::partition {
namespace {

using internal::IsMember;
using internal::NodeValues;
using internal::SortedDistinct;

// Buckets listed one by one in DebugString up to this many.
constexpr size_t kDebugBuckets = 16;

// The first point of the bucket with `prefix` at `depth` (no shift by 64 for depth 0).
uint64_t BucketBegin(uint64_t prefix, uint32_t depth) {
  return depth == 0 ? 0 : prefix << (64 - depth);
}

}  // namespace

ExtendibleScheme::ExtendibleScheme(const SchemeOptions& options, std::vector<NodeId> nodes)
    : options_(options),
      nodes_(std::move(nodes)),
      depth_(options.initial_depth),
      shift_(63 - options.initial_depth) {
  std::sort(nodes_.begin(), nodes_.end());
  const size_t slots = size_t{1} << depth_;
  slot_owner_.assign(slots, nodes_.front());
  slot_bucket_.resize(slots);
  buckets_.resize(slots);
  for (size_t i = 0; i < slots; ++i) {
    buckets_[i].prefix = i;
    buckets_[i].depth = depth_;
    buckets_[i].owner = nodes_.front();
    slot_bucket_[i] = static_cast<uint32_t>(i);
  }
}

StatusOr<std::unique_ptr<ExtendibleScheme>> ExtendibleScheme::Create(
    const SchemeOptions& options, std::span<const NodeId> nodes) {
  SHOAL_RETURN_IF_ERROR(internal::ValidateSizedSchemeInputs(options, nodes, "extendible"));
  std::unique_ptr<ExtendibleScheme> scheme(
      new ExtendibleScheme(options, std::vector<NodeId>(nodes.begin(), nodes.end())));
  // The 2^initial_depth initial buckets are all unassigned: Balance places them (004 §5.1).
  SHOAL_RETURN_IF_ERROR(scheme->BalanceBuckets(/*initial=*/true));
  return scheme;
}

size_t ExtendibleScheme::FirstSlot(const Bucket& bucket) const {
  return static_cast<size_t>(bucket.prefix) << (depth_ - bucket.depth);
}

size_t ExtendibleScheme::SlotCount(const Bucket& bucket) const {
  return size_t{1} << (depth_ - bucket.depth);
}

Status ExtendibleScheme::AddNode(NodeId node) {
  auto it = std::lower_bound(nodes_.begin(), nodes_.end(), node);
  if (it != nodes_.end() && *it == node) {
    return AlreadyExistsError(fmt::format("node {} already present", node.DebugString()));
  }
  nodes_.insert(it, node);
  Status status = BalanceBuckets(/*initial=*/false);
  if (!status.ok()) nodes_.erase(std::find(nodes_.begin(), nodes_.end(), node));
  return status;
}

Status ExtendibleScheme::RemoveNode(NodeId node) {
  auto it = std::lower_bound(nodes_.begin(), nodes_.end(), node);
  if (it == nodes_.end() || *it != node) {
    return NotFoundError(fmt::format("node {} not present", node.DebugString()));
  }
  if (nodes_.size() == 1) return FailedPreconditionError("cannot remove the last node");
  nodes_.erase(it);
  // The removed node's buckets now have an owner outside nodes_: Balance's unassigned ones.
  Status status = BalanceBuckets(/*initial=*/false);
  if (!status.ok()) nodes_.insert(std::lower_bound(nodes_.begin(), nodes_.end(), node), node);
  return status;
}

void ExtendibleScheme::OnInsert(const KeyRef& key, uint64_t bytes) {
  const uint64_t point = key.point.value();
  const uint32_t index = slot_bucket_[SlotOf(point)];
  Bucket& bucket = buckets_[index];
  Entry& entry = bucket.entries[point];
  ++entry.keys;
  entry.bytes += bytes;
  ++bucket.keys;
  bucket.bytes += bytes;
  ++total_keys_;
  total_bytes_ += bytes;
  if (bucket.bytes > options_.theta_max_bytes) SplitWhileOversized(index);
}

void ExtendibleScheme::OnErase(const KeyRef& key, uint64_t bytes) {
  const uint64_t point = key.point.value();
  Bucket& bucket = buckets_[slot_bucket_[SlotOf(point)]];
  auto it = bucket.entries.find(point);
  if (it == bucket.entries.end()) return;  // never inserted: ignored (see the class comment)
  Entry& entry = it->second;
  // The last key at a point takes whatever is left, so the entry never keeps stray bytes.
  const uint64_t removed = entry.keys == 1 ? entry.bytes : std::min(bytes, entry.bytes);
  --entry.keys;
  entry.bytes -= removed;
  if (entry.keys == 0) bucket.entries.erase(it);
  --bucket.keys;
  bucket.bytes -= removed;
  --total_keys_;
  total_bytes_ -= removed;
}

void ExtendibleScheme::Rebalance() {
  // Cannot fail on a valid scheme (see the header); on failure nothing changed.
  BalanceBuckets(/*initial=*/false).IgnoreError();
}

void ExtendibleScheme::SplitWhileOversized(uint32_t index) {
  std::vector<uint32_t> pending = {index};
  while (!pending.empty()) {
    const uint32_t i = pending.back();
    pending.pop_back();
    if (buckets_[i].bytes <= options_.theta_max_bytes) continue;
    if (buckets_[i].depth >= options_.max_depth) continue;  // stays oversized at max depth
    const uint32_t upper = Split(i);
    pending.push_back(i);
    pending.push_back(upper);
  }
}

uint32_t ExtendibleScheme::Split(uint32_t index) {
  if (buckets_[index].depth == depth_) DoubleDirectory();
  Bucket upper;
  {
    Bucket& lower = buckets_[index];
    lower.prefix <<= 1;
    ++lower.depth;
    upper.prefix = lower.prefix | 1;
    upper.depth = lower.depth;
    upper.owner = lower.owner;  // splits are local: both halves stay on the node (004 §4)
    const uint64_t middle = BucketBegin(upper.prefix, upper.depth);
    for (auto it = lower.entries.begin(); it != lower.entries.end();) {
      if (it->first >= middle) {
        upper.keys += it->second.keys;
        upper.bytes += it->second.bytes;
        upper.entries.insert(*it);
        lower.entries.erase(it++);
      } else {
        ++it;
      }
    }
    lower.keys -= upper.keys;
    lower.bytes -= upper.bytes;
  }
  const auto upper_index = static_cast<uint32_t>(buckets_.size());
  const size_t first = FirstSlot(upper);
  const size_t count = SlotCount(upper);
  buckets_.push_back(std::move(upper));
  std::fill_n(slot_bucket_.begin() + static_cast<ptrdiff_t>(first), count, upper_index);
  ++splits_;
  return upper_index;
}

void ExtendibleScheme::DoubleDirectory() {
  const size_t slots = slot_bucket_.size() * 2;
  std::vector<uint32_t> slot_bucket(slots);
  std::vector<NodeId> slot_owner(slots);
  // With high-bit addressing, new slot s refines old slot s >> 1.
  for (size_t s = 0; s < slots; ++s) {
    slot_bucket[s] = slot_bucket_[s >> 1];
    slot_owner[s] = slot_owner_[s >> 1];
  }
  slot_bucket_ = std::move(slot_bucket);
  slot_owner_ = std::move(slot_owner);
  ++depth_;
  --shift_;
}

Status ExtendibleScheme::BalanceBuckets(bool initial) {
  // Paper 004 §5.1: the normalized size of a bucket of depth d is 2^(D-d).
  std::vector<BalanceBucket> input;
  input.reserve(buckets_.size());
  for (size_t i = 0; i < buckets_.size(); ++i) {
    const Bucket& bucket = buckets_[i];
    input.push_back({BucketId(static_cast<uint32_t>(i)), uint64_t{1} << (depth_ - bucket.depth),
                     initial ? std::nullopt : std::optional<NodeId>(bucket.owner)});
  }
  SHOAL_ASSIGN_OR_RETURN(BalanceResult result, Balance(input, nodes_));
  for (size_t i = 0; i < buckets_.size(); ++i) buckets_[i].owner = result.owners[i];
  RefillSlotOwners();
  return OkStatus();
}

void ExtendibleScheme::RefillSlotOwners() {
  for (const Bucket& bucket : buckets_) {
    std::fill_n(slot_owner_.begin() + static_cast<ptrdiff_t>(FirstSlot(bucket)), SlotCount(bucket),
                bucket.owner);
  }
}

std::vector<PartitionInfo> ExtendibleScheme::Partitions() const {
  std::vector<PartitionInfo> partitions;
  partitions.reserve(buckets_.size());
  for (size_t s = 0; s < slot_bucket_.size();) {
    const Bucket& bucket = buckets_[slot_bucket_[s]];
    PartitionInfo info;
    info.owner = bucket.owner;
    info.begin_point = BucketBegin(bucket.prefix, bucket.depth);
    if (bucket.prefix + 1 == (uint64_t{1} << bucket.depth)) {
      info.end_is_max = true;  // the last bucket; end_point stays 0
    } else {
      info.end_point = BucketBegin(bucket.prefix + 1, bucket.depth);
    }
    info.keys = bucket.keys;
    info.bytes = bucket.bytes;
    partitions.push_back(std::move(info));
    s += SlotCount(bucket);
  }
  return partitions;
}

std::unique_ptr<Scheme> ExtendibleScheme::Clone() const {
  return std::unique_ptr<Scheme>(new ExtendibleScheme(*this));
}

Status ExtendibleScheme::CheckInvariants() const {
  if (nodes_.empty()) return InternalError("extendible: no nodes");
  if (!SortedDistinct(nodes_)) return InternalError("extendible: nodes not sorted and distinct");
  if (options_.theta_max_bytes < 2 * options_.theta_min_bytes) {
    return InternalError("extendible: theta max below twice theta min");
  }
  if (depth_ < options_.initial_depth || depth_ > options_.max_depth || shift_ != 63 - depth_) {
    return InternalError(fmt::format("extendible: bad global depth {}", depth_));
  }
  const size_t slots = size_t{1} << depth_;
  if (slot_bucket_.size() != slots || slot_owner_.size() != slots) {
    return InternalError("extendible: directory size is not 2^D");
  }
  std::vector<bool> seen(buckets_.size(), false);
  uint64_t keys = 0;
  uint64_t bytes = 0;
  uint32_t deepest = 0;
  // Walk the directory: each bucket must fill exactly its 2^(D-d) aligned slots, once.
  for (size_t s = 0; s < slots;) {
    const uint32_t index = slot_bucket_[s];
    if (index >= buckets_.size()) return InternalError("extendible: slot to no bucket");
    if (seen[index]) {
      return InternalError(fmt::format("extendible: bucket {} not contiguous", index));
    }
    seen[index] = true;
    const Bucket& bucket = buckets_[index];
    if (bucket.depth > depth_) return InternalError("extendible: local depth above D");
    if (FirstSlot(bucket) != s) {
      return InternalError(fmt::format("extendible: bucket {} starts at slot {}", index, s));
    }
    const size_t count = SlotCount(bucket);
    for (size_t t = s; t < s + count; ++t) {
      if (slot_bucket_[t] != index) return InternalError("extendible: bucket ranges overlap");
      if (slot_owner_[t] != bucket.owner) return InternalError("extendible: stale slot owner");
    }
    if (!IsMember(nodes_, bucket.owner)) {
      return InternalError(fmt::format("extendible: owner {} not a member", bucket.owner.value()));
    }
    uint64_t entry_keys = 0;
    uint64_t entry_bytes = 0;
    for (const auto& [point, entry] : bucket.entries) {
      if (entry.keys == 0) return InternalError("extendible: empty entry");
      if (bucket.depth > 0 && (point >> (64 - bucket.depth)) != bucket.prefix) {
        return InternalError(fmt::format("extendible: point {} outside bucket {}", point, index));
      }
      entry_keys += entry.keys;
      entry_bytes += entry.bytes;
    }
    if (entry_keys != bucket.keys || entry_bytes != bucket.bytes) {
      return InternalError(fmt::format("extendible: bucket {} accounting differs", index));
    }
    if (bucket.bytes > options_.theta_max_bytes && bucket.depth < options_.max_depth) {
      return InternalError(fmt::format("extendible: bucket {} above theta max", index));
    }
    keys += bucket.keys;
    bytes += bucket.bytes;
    deepest = std::max(deepest, bucket.depth);
    s += count;
  }
  if (std::find(seen.begin(), seen.end(), false) != seen.end()) {
    return InternalError("extendible: bucket missing from the directory");
  }
  if (keys != total_keys_ || bytes != total_bytes_) {
    return InternalError("extendible: totals differ from the buckets");
  }
  if (depth_ > options_.initial_depth && deepest != depth_) {
    return InternalError("extendible: D is larger than every local depth");
  }
  return OkStatus();
}

std::string ExtendibleScheme::DebugString() const {
  std::vector<size_t> per_node(nodes_.size(), 0);
  for (const Bucket& bucket : buckets_) {
    auto it = std::lower_bound(nodes_.begin(), nodes_.end(), bucket.owner);
    if (it != nodes_.end() && *it == bucket.owner) ++per_node[it - nodes_.begin()];
  }
  std::string out = fmt::format(
      "extendible{{D={}, buckets={}, keys={}, bytes={}, nodes=[{}], buckets_per_node=[{}]", depth_,
      buckets_.size(), total_keys_, total_bytes_, fmt::join(NodeValues(nodes_), ","),
      fmt::join(per_node, ","));
  if (buckets_.size() <= kDebugBuckets) {
    std::vector<std::string> parts;
    for (const PartitionInfo& p : Partitions()) {
      parts.push_back(fmt::format("{:016x}@{}:{}", p.begin_point, p.owner.value(), p.bytes));
    }
    out += fmt::format(", [{}]", fmt::join(parts, " "));
  }
  out += "}";
  return out;
}

StatusOr<std::unique_ptr<Scheme>> NewExtendibleScheme(const SchemeOptions& options,
                                                      std::span<const NodeId> nodes) {
  SHOAL_ASSIGN_OR_RETURN(std::unique_ptr<ExtendibleScheme> scheme,
                         ExtendibleScheme::Create(options, nodes));
  return std::unique_ptr<Scheme>(std::move(scheme));
}

}  // namespace shoal::partition
