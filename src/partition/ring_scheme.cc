#include "src/partition/ring_scheme.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <string_view>

#include "src/partition/hash_scheme_util.h"
#include "src/partition/schemes.h"

namespace shoal::partition {
namespace {

constexpr uint64_t kMaxPoint = std::numeric_limits<uint64_t>::max();

// The least k in [1, kMaxIndexBits] with 2^k >= tokens.
int IndexBitsFor(size_t tokens) {
  int k = 1;
  while (k < RingScheme::kMaxIndexBits && (size_t{1} << k) < tokens) ++k;
  return k;
}

}  // namespace

RingScheme::RingScheme(const SchemeOptions& options, std::span<const NodeId> nodes)
    : vnodes_(options.vnodes), hash_seed_(options.hash_seed), nodes_(internal::SortedNodes(nodes)) {
  std::vector<Entry> entries;
  entries.reserve(nodes_.size() * vnodes_);
  for (NodeId node : nodes_) {
    for (uint64_t token : HashedTokens(node)) entries.push_back({token, node});
  }
  Rebuild(std::move(entries));
}

uint64_t RingScheme::VnodeToken(NodeId node, uint32_t vnode, uint64_t seed) {
  char bytes[8];
  for (int i = 0; i < 4; ++i) {
    bytes[i] = static_cast<char>(node.value() >> (8 * i));
    bytes[4 + i] = static_cast<char>(vnode >> (8 * i));
  }
  return Hash64(std::string_view(bytes, sizeof(bytes)), seed);
}

std::vector<uint64_t> RingScheme::HashedTokens(NodeId node) const {
  std::vector<uint64_t> tokens;
  tokens.reserve(vnodes_);
  for (uint32_t i = 0; i < vnodes_; ++i) tokens.push_back(VnodeToken(node, i, hash_seed_));
  return tokens;
}

std::vector<RingScheme::Entry> RingScheme::Entries() const {
  std::vector<Entry> entries;
  entries.reserve(token_count());
  for (size_t i = 0; i < token_count(); ++i) entries.push_back({tokens_[i], owners_[i]});
  return entries;
}

void RingScheme::Rebuild(std::vector<Entry> entries) {
  // (token, owner) is a total order, so the result does not depend on the order of `entries`.
  std::sort(entries.begin(), entries.end());
  entries.erase(std::unique(entries.begin(), entries.end()), entries.end());

  const size_t n = entries.size();
  tokens_.resize(n + 1);
  owners_.resize(n + 1);
  for (size_t i = 0; i < n; ++i) {
    tokens_[i] = entries[i].token;
    owners_[i] = entries[i].owner;
  }
  tokens_[n] = kMaxPoint;
  owners_[n] = owners_[0];

  const int bits = IndexBitsFor(n);
  index_shift_ = 64 - bits;
  index_.resize(size_t{1} << bits);
  size_t pos = 0;
  for (size_t b = 0; b < index_.size(); ++b) {
    const uint64_t bucket_begin = static_cast<uint64_t>(b) << index_shift_;
    while (pos < n && tokens_[pos] < bucket_begin) ++pos;
    index_[b] = static_cast<uint32_t>(pos);
  }
}

Status RingScheme::AddNode(NodeId node) {
  const std::vector<uint64_t> tokens = HashedTokens(node);
  return AddNodeWithTokens(node, tokens);
}

Status RingScheme::AddNodeWithTokens(NodeId node, std::span<const uint64_t> tokens) {
  auto it = std::lower_bound(nodes_.begin(), nodes_.end(), node);
  if (it != nodes_.end() && *it == node) {
    return AlreadyExistsError(fmt::format("node {} already present", node.DebugString()));
  }
  if (tokens.empty()) {
    return InvalidArgumentError(fmt::format("ring: node {} needs a token", node.DebugString()));
  }
  std::vector<Entry> entries = Entries();
  for (uint64_t token : tokens) entries.push_back({token, node});
  nodes_.insert(it, node);
  Rebuild(std::move(entries));
  return OkStatus();
}

Status RingScheme::RemoveNode(NodeId node) {
  auto it = std::lower_bound(nodes_.begin(), nodes_.end(), node);
  if (it == nodes_.end() || *it != node) {
    return NotFoundError(fmt::format("node {} not present", node.DebugString()));
  }
  if (nodes_.size() == 1) return FailedPreconditionError("cannot remove the last node");
  std::vector<Entry> entries = Entries();
  std::erase_if(entries, [node](const Entry& e) { return e.owner == node; });
  nodes_.erase(it);
  Rebuild(std::move(entries));
  return OkStatus();
}

std::vector<PartitionInfo> RingScheme::Partitions() const {
  const size_t n = token_count();
  std::vector<PartitionInfo> partitions;
  partitions.reserve(n + 1);
  auto add = [&partitions](NodeId owner, uint64_t first, uint64_t last) {
    PartitionInfo info;
    info.owner = owner;
    info.begin_point = first;
    if (last == kMaxPoint) {
      info.end_is_max = true;
    } else {
      info.end_point = last + 1;
    }
    partitions.push_back(std::move(info));
  };
  for (size_t i = 0; i < n; ++i) {
    if (i == 0) {
      add(owners_[0], 0, tokens_[0]);
    } else if (tokens_[i] != tokens_[i - 1]) {  // a collision's second entry owns nothing
      add(owners_[i], tokens_[i - 1] + 1, tokens_[i]);
    }
  }
  if (tokens_[n - 1] != kMaxPoint) add(owners_[0], tokens_[n - 1] + 1, kMaxPoint);
  return partitions;
}

std::vector<PointInterval> RingScheme::RangesOf(NodeId node) const {
  // Algorithm 4 walks the node's own tokens and finds each predecessor; walking the sorted ring
  // once gives the same ranges already in point order. Its wrap cases become: the range of the
  // first token starts at 0, and the first token's node also owns (t_max, 2^64-1]. (As printed,
  // Algorithm 4 ends that range at maxToken - 1, leaving the point 2^64-1 unowned; Definition 6.1
  // includes it.)
  std::vector<PointInterval> ranges;
  auto add = [&ranges](uint64_t first, uint64_t last) {
    if (!ranges.empty() && ranges.back().last + 1 == first) {
      ranges.back().last = last;
    } else {
      ranges.push_back({first, last});
    }
  };
  const size_t n = token_count();
  for (size_t i = 0; i < n; ++i) {
    if (owners_[i] != node) continue;
    if (i == 0) {
      add(0, tokens_[0]);
    } else if (tokens_[i] != tokens_[i - 1]) {
      add(tokens_[i - 1] + 1, tokens_[i]);
    }
  }
  if (owners_[0] == node && tokens_[n - 1] != kMaxPoint) add(tokens_[n - 1] + 1, kMaxPoint);
  return ranges;
}

std::unique_ptr<Scheme> RingScheme::Clone() const { return std::make_unique<RingScheme>(*this); }

Status RingScheme::CheckInvariants() const {
  SHOAL_RETURN_IF_ERROR(internal::CheckSortedMembers("ring", nodes_));
  if (tokens_.size() != owners_.size() || tokens_.size() < 2) {
    return InternalError("ring: token and owner arrays disagree or hold no token");
  }
  const size_t n = token_count();
  if (tokens_[n] != kMaxPoint || owners_[n] != owners_[0]) {
    return InternalError("ring: bad sentinel");
  }
  std::vector<size_t> tokens_per_node(nodes_.size(), 0);
  for (size_t i = 0; i < n; ++i) {
    if (i > 0 && Entry{tokens_[i - 1], owners_[i - 1]} >= Entry{tokens_[i], owners_[i]}) {
      return InternalError(fmt::format("ring: entries not sorted by (token, node) at {}", i));
    }
    auto it = std::lower_bound(nodes_.begin(), nodes_.end(), owners_[i]);
    if (it == nodes_.end() || *it != owners_[i]) {
      return InternalError(
          fmt::format("ring: token owner {} is not a member", owners_[i].DebugString()));
    }
    ++tokens_per_node[it - nodes_.begin()];
  }
  for (size_t j = 0; j < nodes_.size(); ++j) {
    if (tokens_per_node[j] == 0) {
      return InternalError(fmt::format("ring: node {} has no token", nodes_[j].DebugString()));
    }
  }
  const int bits = index_bits();
  if (bits < 1 || bits > kMaxIndexBits || index_.size() != (size_t{1} << bits) ||
      (index_.size() < n && bits != kMaxIndexBits)) {
    return InternalError(fmt::format("ring: index of {} entries for {} tokens", index_.size(), n));
  }
  for (size_t b = 0; b < index_.size(); ++b) {
    const uint64_t bucket_begin = static_cast<uint64_t>(b) << index_shift_;
    const size_t expected =
        std::lower_bound(tokens_.begin(), tokens_.begin() + n, bucket_begin) - tokens_.begin();
    if (index_[b] != expected) {
      return InternalError(fmt::format("ring: index[{}] = {}, first token >= bucket is at {}", b,
                                       index_[b], expected));
    }
  }
  return OkStatus();
}

std::string RingScheme::DebugString() const {
  return fmt::format("ring{{nodes=[{}], vnodes={}, seed={}, tokens={}, index_bits={}}}",
                     internal::JoinNodeIds(nodes_), vnodes_, hash_seed_, token_count(),
                     index_bits());
}

StatusOr<std::unique_ptr<Scheme>> NewRingScheme(const SchemeOptions& options,
                                                std::span<const NodeId> nodes) {
  SHOAL_RETURN_IF_ERROR(ValidateOptions(options));
  SHOAL_RETURN_IF_ERROR(internal::CheckInitialNodes("ring", nodes));
  return std::make_unique<RingScheme>(options, nodes);
}

}  // namespace shoal::partition
