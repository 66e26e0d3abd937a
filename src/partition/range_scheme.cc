#include "src/partition/range_scheme.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iterator>
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

// Partitions listed one by one in DebugString up to this many.
constexpr size_t kDebugPartitions = 16;

uint64_t AbsDiff(uint64_t a, uint64_t b) { return a > b ? a - b : b - a; }

// A raw key for DebugString: printable ASCII as is, anything else as \xNN.
std::string Printable(std::string_view key) {
  std::string out;
  for (char c : key) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7f && byte != '\\') {
      out += c;
    } else {
      out += fmt::format("\\x{:02x}", byte);
    }
  }
  return out;
}

}  // namespace

RangeScheme::RangeScheme(const SchemeOptions& options, std::vector<NodeId> nodes)
    : options_(options), nodes_(std::move(nodes)) {
  std::sort(nodes_.begin(), nodes_.end());
  // One partition over the whole key space: raw keys give no way to pre-cut N equal ranges.
  begins_.emplace_back();
  owners_.push_back(nodes_.front());
  totals_.emplace_back();
}

StatusOr<std::unique_ptr<RangeScheme>> RangeScheme::Create(const SchemeOptions& options,
                                                           std::span<const NodeId> nodes) {
  SHOAL_RETURN_IF_ERROR(internal::ValidateSizedSchemeInputs(options, nodes, "range"));
  std::unique_ptr<RangeScheme> scheme(
      new RangeScheme(options, std::vector<NodeId>(nodes.begin(), nodes.end())));
  SHOAL_RETURN_IF_ERROR(scheme->BalancePartitions(/*initial=*/true));
  return scheme;
}

Status RangeScheme::AddNode(NodeId node) {
  auto it = std::lower_bound(nodes_.begin(), nodes_.end(), node);
  if (it != nodes_.end() && *it == node) {
    return AlreadyExistsError(fmt::format("node {} already present", node.DebugString()));
  }
  nodes_.insert(it, node);
  Status status = BalancePartitions(/*initial=*/false);
  if (!status.ok()) nodes_.erase(std::find(nodes_.begin(), nodes_.end(), node));
  return status;
}

Status RangeScheme::RemoveNode(NodeId node) {
  auto it = std::lower_bound(nodes_.begin(), nodes_.end(), node);
  if (it == nodes_.end() || *it != node) {
    return NotFoundError(fmt::format("node {} not present", node.DebugString()));
  }
  if (nodes_.size() == 1) return FailedPreconditionError("cannot remove the last node");
  nodes_.erase(it);
  // The removed node's partitions now have an owner outside nodes_: Balance's unassigned ones.
  Status status = BalancePartitions(/*initial=*/false);
  if (!status.ok()) nodes_.insert(std::lower_bound(nodes_.begin(), nodes_.end(), node), node);
  return status;
}

void RangeScheme::OnInsert(const KeyRef& key, uint64_t bytes) {
  const size_t index = IndexOf(key.raw);
  auto it = keys_.find(key.raw);
  if (it == keys_.end()) {
    keys_.emplace(std::string(key.raw), bytes);
    ++totals_[index].keys;
    totals_[index].bytes += bytes;
    total_bytes_ += bytes;
    SplitWhileOversized(index);
    SplitUntilMinimumCount();
    return;
  }
  // A key stored again: its size is replaced.
  const uint64_t old = it->second;
  it->second = bytes;
  totals_[index].bytes = totals_[index].bytes - old + bytes;
  total_bytes_ = total_bytes_ - old + bytes;
  if (bytes > old) SplitWhileOversized(index);
  if (bytes < old) MergeWhileUndersized(index);
}

void RangeScheme::OnErase(const KeyRef& key, uint64_t /*bytes*/) {
  auto it = keys_.find(key.raw);
  if (it == keys_.end()) return;  // not stored: ignored (see the class comment)
  const size_t index = IndexOf(key.raw);
  const uint64_t stored = it->second;
  keys_.erase(it);
  --totals_[index].keys;
  totals_[index].bytes -= stored;
  total_bytes_ -= stored;
  MergeWhileUndersized(index);
}

void RangeScheme::Rebalance() {
  // Cannot fail on a valid scheme (see the header); on failure nothing changed.
  BalancePartitions(/*initial=*/false).IgnoreError();
}

std::map<std::string, uint64_t, std::less<>>::const_iterator RangeScheme::KeysBegin(
    size_t index) const {
  return keys_.lower_bound(begins_[index]);
}

std::map<std::string, uint64_t, std::less<>>::const_iterator RangeScheme::KeysEnd(
    size_t index) const {
  return index + 1 < begins_.size() ? keys_.lower_bound(begins_[index + 1]) : keys_.end();
}

void RangeScheme::SplitWhileOversized(size_t index) {
  // Partitions [i, end) still to check; a split adds one and re-checks the left half.
  size_t end = index + 1;
  for (size_t i = index; i < end;) {
    if (totals_[i].bytes > options_.theta_max_bytes && Split(i)) {
      ++end;
    } else {
      ++i;
    }
  }
}

void RangeScheme::SplitUntilMinimumCount() {
  // Paper 001 §3.1 keeps at least N partitions. Raw keys give no way to pre-cut N ranges, so the
  // scheme grows to N as data arrives: the largest partition (lowest index on ties) splits at its
  // volume median while fewer than N exist and it holds two keys or more.
  while (begins_.size() < options_.min_partitions) {
    size_t largest = 0;
    for (size_t i = 1; i < totals_.size(); ++i) {
      if (totals_[i].bytes > totals_[largest].bytes) largest = i;
    }
    if (!Split(largest)) return;
  }
}

bool RangeScheme::Split(size_t index) {
  // Paper 001 §3.1: cut so that the two sub-ranges hold roughly equal volumes. Cut positions lie
  // before each key but the first; the volume left of the cut grows with the position, so the
  // best cut is the first one at which the left volume reaches half (or the one just before).
  const auto first = KeysBegin(index);
  const auto last = KeysEnd(index);
  if (first == last) return false;
  const uint64_t total = totals_[index].bytes;
  uint64_t left = first->second;
  uint64_t left_keys = 1;
  auto best = last;
  uint64_t best_left = 0;
  uint64_t best_keys = 0;
  uint64_t best_diff = 0;
  for (auto it = std::next(first); it != last; ++it) {
    const uint64_t diff = AbsDiff(left, total - left);
    if (best == last || diff < best_diff) {
      best = it;
      best_left = left;
      best_keys = left_keys;
      best_diff = diff;
    }
    if (left >= total - left) break;
    left += it->second;
    ++left_keys;
  }
  if (best == last) return false;  // a single key: nothing to cut between
  const Totals right = {totals_[index].keys - best_keys, total - best_left};
  totals_[index] = {best_keys, best_left};
  const auto at = static_cast<ptrdiff_t>(index + 1);
  begins_.insert(begins_.begin() + at, best->first);
  owners_.insert(owners_.begin() + at, owners_[index]);  // the right half stays on the node
  totals_.insert(totals_.begin() + at, right);
  ++splits_;
  return true;
}

void RangeScheme::MergeWhileUndersized(size_t index) {
  // Paper 001 §3.1: merge two adjacent partitions whose total is below Θmin, only if they are
  // on the same node and only while more than N = min_partitions partitions exist.
  size_t i = index;
  auto mergeable = [&](size_t lo) {
    return owners_[lo] == owners_[lo + 1] &&
           totals_[lo].bytes + totals_[lo + 1].bytes < options_.theta_min_bytes;
  };
  while (begins_.size() > options_.min_partitions) {
    const bool with_left = i > 0 && mergeable(i - 1);
    const bool with_right = i + 1 < begins_.size() && mergeable(i);
    if (!with_left && !with_right) break;
    size_t lo = with_left ? i - 1 : i;
    if (with_left && with_right &&
        totals_[i].bytes + totals_[i + 1].bytes < totals_[i - 1].bytes + totals_[i].bytes) {
      lo = i;
    }
    totals_[lo].keys += totals_[lo + 1].keys;
    totals_[lo].bytes += totals_[lo + 1].bytes;
    const auto at = static_cast<ptrdiff_t>(lo + 1);
    begins_.erase(begins_.begin() + at);
    owners_.erase(owners_.begin() + at);
    totals_.erase(totals_.begin() + at);
    ++merges_;
    i = lo;
  }
}

Status RangeScheme::BalancePartitions(bool initial) {
  std::vector<BalanceBucket> input;
  input.reserve(begins_.size());
  for (size_t i = 0; i < begins_.size(); ++i) {
    input.push_back({BucketId(static_cast<uint32_t>(i)), totals_[i].bytes,
                     initial ? std::nullopt : std::optional<NodeId>(owners_[i])});
  }
  SHOAL_ASSIGN_OR_RETURN(BalanceResult result, Balance(input, nodes_));
  owners_ = std::move(result.owners);
  return OkStatus();
}

std::vector<PartitionInfo> RangeScheme::Partitions() const {
  std::vector<PartitionInfo> partitions;
  partitions.reserve(begins_.size());
  for (size_t i = 0; i < begins_.size(); ++i) {
    PartitionInfo info;
    info.owner = owners_[i];
    info.begin_key = begins_[i];
    if (i + 1 < begins_.size()) {
      info.end_key = begins_[i + 1];
    } else {
      info.end_is_max = true;
    }
    info.keys = totals_[i].keys;
    info.bytes = totals_[i].bytes;
    partitions.push_back(std::move(info));
  }
  return partitions;
}

std::unique_ptr<Scheme> RangeScheme::Clone() const {
  return std::unique_ptr<Scheme>(new RangeScheme(*this));
}

Status RangeScheme::CheckInvariants() const {
  if (nodes_.empty()) return InternalError("range: no nodes");
  if (!SortedDistinct(nodes_)) return InternalError("range: nodes not sorted and distinct");
  if (options_.theta_max_bytes < 2 * options_.theta_min_bytes) {
    return InternalError("range: theta max below twice theta min");
  }
  const size_t n = begins_.size();
  if (n == 0 || owners_.size() != n || totals_.size() != n) {
    return InternalError("range: partition arrays differ in size");
  }
  // Totality: the first partition starts at the smallest key (empty), bounds strictly increase,
  // and the last runs to the end, so every key falls in exactly one partition.
  if (!begins_.front().empty()) return InternalError("range: first partition not at the start");
  for (size_t i = 1; i < n; ++i) {
    if (!(begins_[i - 1] < begins_[i])) return InternalError("range: bounds not increasing");
  }
  if (merges_ > 0 && n < options_.min_partitions) {
    return InternalError(
        fmt::format("range: {} partitions after a merge, minimum {}", n, options_.min_partitions));
  }
  for (NodeId owner : owners_) {
    if (!IsMember(nodes_, owner)) {
      return InternalError(fmt::format("range: owner {} not a member", owner.value()));
    }
  }
  std::vector<Totals> counted(n);
  uint64_t bytes = 0;
  size_t p = 0;
  for (const auto& [key, size] : keys_) {
    while (p + 1 < n && !(key < begins_[p + 1])) ++p;
    ++counted[p].keys;
    counted[p].bytes += size;
    bytes += size;
  }
  for (size_t i = 0; i < n; ++i) {
    if (counted[i].keys != totals_[i].keys || counted[i].bytes != totals_[i].bytes) {
      return InternalError(fmt::format("range: partition {} accounting differs", i));
    }
    if (totals_[i].bytes > options_.theta_max_bytes && totals_[i].keys > 1) {
      return InternalError(fmt::format("range: partition {} above theta max", i));
    }
  }
  if (bytes != total_bytes_) return InternalError("range: total bytes differ from the keys");
  return OkStatus();
}

std::string RangeScheme::DebugString() const {
  std::string out =
      fmt::format("range{{nodes=[{}], partitions={}, keys={}, bytes={}, splits={}, merges={}",
                  fmt::join(NodeValues(nodes_), ","), begins_.size(), keys_.size(), total_bytes_,
                  splits_, merges_);
  if (begins_.size() <= kDebugPartitions) {
    std::vector<std::string> parts;
    for (size_t i = 0; i < begins_.size(); ++i) {
      parts.push_back(
          fmt::format("\"{}\"@{}:{}", Printable(begins_[i]), owners_[i].value(), totals_[i].bytes));
    }
    out += fmt::format(", [{}]", fmt::join(parts, " "));
  }
  out += "}";
  return out;
}

StatusOr<std::unique_ptr<Scheme>> NewRangeScheme(const SchemeOptions& options,
                                                 std::span<const NodeId> nodes) {
  SHOAL_ASSIGN_OR_RETURN(std::unique_ptr<RangeScheme> scheme, RangeScheme::Create(options, nodes));
  return std::unique_ptr<Scheme>(std::move(scheme));
}

}  // namespace shoal::partition
