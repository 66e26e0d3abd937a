#include "src/partition/rendezvous_scheme.h"

#include <fmt/format.h>

#include <algorithm>

#include "src/partition/schemes.h"

namespace shoal::partition {
namespace {

// Separates the hash inputs of buckets from the salts of nodes (golden-ratio constant).
constexpr uint64_t kBucketDomain = 0x9e3779b97f4a7c15ULL;

}  // namespace

RendezvousScheme::RendezvousScheme(const SchemeOptions& options, std::span<const NodeId> nodes)
    : hash_seed_(options.hash_seed),
      buckets_(options.rendezvous_buckets),
      nodes_(internal::SortedNodes(nodes)) {
  salts_.reserve(nodes_.size());
  for (NodeId node : nodes_) salts_.push_back(SaltOf(node, hash_seed_));
  ElectAllBuckets();
}

uint64_t RendezvousScheme::SaltOf(NodeId node, uint64_t seed) {
  return HashU64(node.value(), seed);
}

uint64_t RendezvousScheme::BucketInput(uint32_t bucket, uint64_t seed) {
  return HashU64(bucket, seed ^ kBucketDomain);
}

size_t RendezvousScheme::PositionOf(NodeId node) const {
  auto it = std::lower_bound(nodes_.begin(), nodes_.end(), node);
  if (it == nodes_.end() || *it != node) return nodes_.size();
  return static_cast<size_t>(it - nodes_.begin());
}

void RendezvousScheme::ElectAllBuckets() {
  bucket_owners_.resize(buckets_);
  for (uint32_t b = 0; b < buckets_; ++b) {
    bucket_owners_[b] = nodes_[Winner(BucketInput(b, hash_seed_))];
  }
}

Status RendezvousScheme::AddNode(NodeId node) {
  auto it = std::lower_bound(nodes_.begin(), nodes_.end(), node);
  if (it != nodes_.end() && *it == node) {
    return AlreadyExistsError(fmt::format("node {} already present", node.DebugString()));
  }
  const uint64_t salt = SaltOf(node, hash_seed_);
  // The new node takes exactly the buckets where it beats the current winner, which is what a
  // recomputation from scratch gives.
  for (uint32_t b = 0; b < buckets_; ++b) {
    const uint64_t input = BucketInput(b, hash_seed_);
    const NodeId owner = bucket_owners_[b];
    const uint64_t owner_weight = Weight(input, salts_[PositionOf(owner)]);
    const uint64_t weight = Weight(input, salt);
    if (weight > owner_weight || (weight == owner_weight && node < owner)) {
      bucket_owners_[b] = node;
    }
  }
  const size_t pos = static_cast<size_t>(it - nodes_.begin());
  nodes_.insert(it, node);
  salts_.insert(salts_.begin() + static_cast<ptrdiff_t>(pos), salt);
  return OkStatus();
}

Status RendezvousScheme::RemoveNode(NodeId node) {
  const size_t pos = PositionOf(node);
  if (pos == nodes_.size()) {
    return NotFoundError(fmt::format("node {} not present", node.DebugString()));
  }
  if (nodes_.size() == 1) return FailedPreconditionError("cannot remove the last node");
  nodes_.erase(nodes_.begin() + static_cast<ptrdiff_t>(pos));
  salts_.erase(salts_.begin() + static_cast<ptrdiff_t>(pos));
  // Only the removed node's buckets change hands: every other bucket's winner is still there.
  for (uint32_t b = 0; b < buckets_; ++b) {
    if (bucket_owners_[b] == node) {
      bucket_owners_[b] = nodes_[Winner(BucketInput(b, hash_seed_))];
    }
  }
  return OkStatus();
}

std::vector<PartitionInfo> RendezvousScheme::Partitions() const {
  std::vector<PartitionInfo> partitions;
  partitions.reserve(buckets_);
  for (uint32_t b = 0; b < buckets_; ++b) {
    partitions.push_back(internal::EqualBucketPartition(b, buckets_, bucket_owners_[b]));
  }
  return partitions;
}

std::unique_ptr<Scheme> RendezvousScheme::Clone() const {
  return std::make_unique<RendezvousScheme>(*this);
}

Status RendezvousScheme::CheckInvariants() const {
  SHOAL_RETURN_IF_ERROR(internal::CheckSortedMembers("rendezvous", nodes_));
  if (salts_.size() != nodes_.size()) return InternalError("rendezvous: salts and nodes disagree");
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (salts_[i] != SaltOf(nodes_[i], hash_seed_)) {
      return InternalError(fmt::format("rendezvous: stale salt of {}", nodes_[i].DebugString()));
    }
  }
  if (bucket_owners_.size() != buckets_) {
    return InternalError(fmt::format("rendezvous: {} bucket owners for {} buckets",
                                     bucket_owners_.size(), buckets_));
  }
  for (uint32_t b = 0; b < buckets_; ++b) {
    const NodeId expected = nodes_[Winner(BucketInput(b, hash_seed_))];
    if (bucket_owners_[b] != expected) {
      return InternalError(fmt::format("rendezvous: bucket {} owned by {}, highest weight is {}", b,
                                       bucket_owners_[b].DebugString(), expected.DebugString()));
    }
  }
  return OkStatus();
}

std::string RendezvousScheme::DebugString() const {
  return fmt::format("rendezvous{{nodes=[{}], seed={}, buckets={}}}", internal::JoinNodeIds(nodes_),
                     hash_seed_, buckets_);
}

StatusOr<std::unique_ptr<Scheme>> NewRendezvousScheme(const SchemeOptions& options,
                                                      std::span<const NodeId> nodes) {
  SHOAL_RETURN_IF_ERROR(ValidateOptions(options));
  SHOAL_RETURN_IF_ERROR(internal::CheckInitialNodes("rendezvous", nodes));
  return std::make_unique<RendezvousScheme>(options, nodes);
}

}  // namespace shoal::partition
