#include "src/storage/local_directory.h"

#include <fmt/format.h>

#include "src/storage/codec.h"
#include "src/storage/errors.h"

namespace shoal::storage {
namespace {

constexpr uint8_t kBucketFormatV1 = 1;
constexpr uint8_t kEndIsMaxFlag = 0x01;
constexpr size_t kBucketValueBytes = 1 + 1 + 8 + 8 + 1;

bool TransitionAllowed(BucketState from, BucketState to) {
  if (from == to) return true;
  switch (from) {
    case BucketState::kReadWrite:
      return to == BucketState::kLeaving;
    case BucketState::kLeaving:  // abort
    case BucketState::kAdding:   // commit
      return to == BucketState::kReadWrite;
  }
  return false;
}

}  // namespace

std::string_view BucketStateName(BucketState state) {
  switch (state) {
    case BucketState::kReadWrite:
      return "ReadWrite";
    case BucketState::kAdding:
      return "Adding";
    case BucketState::kLeaving:
      return "Leaving";
  }
  return "?";
}

std::string BucketEntry::DebugString() const {
  return fmt::format("{}{}:{}", id.DebugString(), range.DebugString(), BucketStateName(state));
}

std::string BucketMetaKey(BucketId id) {
  std::string key(1, kBucketMetaPrefix);
  AppendBigEndian32(id.value(), &key);
  return key;
}

std::string EncodeBucketEntry(const BucketEntry& entry) {
  std::string value;
  value.push_back(static_cast<char>(kBucketFormatV1));
  value.push_back(static_cast<char>(entry.state));
  AppendBigEndian64(entry.range.begin(), &value);
  AppendBigEndian64(entry.range.end(), &value);
  value.push_back(static_cast<char>(entry.range.end_is_max() ? kEndIsMaxFlag : 0));
  return value;
}

StatusOr<BucketEntry> DecodeBucketEntry(std::string_view meta_key, std::string_view value) {
  if (meta_key.size() != 5 || meta_key[0] != kBucketMetaPrefix) {
    return StorageError(ErrorReason::kCorruption, "bad bucket key");
  }
  if (value.size() != kBucketValueBytes || static_cast<uint8_t>(value[0]) != kBucketFormatV1) {
    return StorageError(ErrorReason::kCorruption, "bad bucket entry");
  }
  const auto state = static_cast<uint8_t>(value[1]);
  if (state < 1 || state > 3) return StorageError(ErrorReason::kCorruption, "bad bucket state");
  const auto flags = static_cast<uint8_t>(value[18]);
  if ((flags & ~kEndIsMaxFlag) != 0) return StorageError(ErrorReason::kCorruption, "bad flags");
  const uint64_t begin = DecodeBigEndian64(value.data() + 2);
  const uint64_t end = DecodeBigEndian64(value.data() + 10);
  BucketEntry entry{.id = BucketId(DecodeBigEndian32(meta_key.data() + 1)),
                    .state = static_cast<BucketState>(state)};
  if ((flags & kEndIsMaxFlag) != 0) {
    if (end != 0) return StorageError(ErrorReason::kCorruption, "bad bucket end");
    entry.range = PointRange::From(begin);
  } else {
    auto range = PointRange::Make(begin, end);
    if (!range.ok()) return StorageError(ErrorReason::kCorruption, "bad bucket range");
    entry.range = *range;
  }
  return entry;
}

Status LocalDirectory::Add(const BucketEntry& entry) {
  if (entry.range.empty()) {
    return StorageError(ErrorReason::kInvalidArgument, "bucket range is empty");
  }
  if (begin_of_.contains(entry.id)) {
    return StorageError(ErrorReason::kBucketState,
                        fmt::format("bucket {} already held", entry.id.DebugString()));
  }
  std::vector<BucketEntry> overlap = Overlapping(entry.range);
  if (!overlap.empty()) {
    return StorageError(
        ErrorReason::kBucketState,
        fmt::format("{} overlaps {}", entry.DebugString(), overlap.front().DebugString()));
  }
  by_begin_.emplace(entry.range.begin(), entry);
  begin_of_.emplace(entry.id, entry.range.begin());
  return OkStatus();
}

Status LocalDirectory::SetState(BucketId id, BucketState state) {
  auto it = begin_of_.find(id);
  if (it == begin_of_.end()) {
    return StorageError(ErrorReason::kNotFound,
                        fmt::format("bucket {} not held", id.DebugString()));
  }
  BucketEntry& entry = by_begin_.at(it->second);
  if (!TransitionAllowed(entry.state, state)) {
    return StorageError(ErrorReason::kBucketState,
                        fmt::format("bucket {}: {} -> {} not allowed", id.DebugString(),
                                    BucketStateName(entry.state), BucketStateName(state)));
  }
  entry.state = state;
  return OkStatus();
}

StatusOr<std::pair<BucketEntry, BucketEntry>> LocalDirectory::Split(BucketId id, uint64_t at,
                                                                    BucketId right_id) {
  SHOAL_ASSIGN_OR_RETURN(BucketEntry entry, Get(id));
  if (entry.state != BucketState::kReadWrite) {
    return StorageError(ErrorReason::kBucketState,
                        fmt::format("cannot split {} ", entry.DebugString()));
  }
  if (begin_of_.contains(right_id)) {
    return StorageError(ErrorReason::kBucketState,
                        fmt::format("bucket {} already held", right_id.DebugString()));
  }
  SHOAL_ASSIGN_OR_RETURN(auto halves, entry.range.SplitAt(at));
  BucketEntry left{.id = id, .range = halves.first, .state = entry.state};
  BucketEntry right{.id = right_id, .range = halves.second, .state = entry.state};
  by_begin_.at(left.range.begin()) = left;
  by_begin_.emplace(right.range.begin(), right);
  begin_of_.emplace(right_id, right.range.begin());
  return std::make_pair(left, right);
}

Status LocalDirectory::Remove(BucketId id) {
  auto it = begin_of_.find(id);
  if (it == begin_of_.end()) {
    return StorageError(ErrorReason::kNotFound,
                        fmt::format("bucket {} not held", id.DebugString()));
  }
  by_begin_.erase(it->second);
  begin_of_.erase(it);
  return OkStatus();
}

StatusOr<BucketEntry> LocalDirectory::Get(BucketId id) const {
  auto it = begin_of_.find(id);
  if (it == begin_of_.end()) {
    return StorageError(ErrorReason::kNotFound,
                        fmt::format("bucket {} not held", id.DebugString()));
  }
  return by_begin_.at(it->second);
}

std::optional<BucketEntry> LocalDirectory::Find(Point point) const {
  auto it = by_begin_.upper_bound(point.value());
  if (it == by_begin_.begin()) return std::nullopt;
  --it;
  if (!it->second.range.Contains(point)) return std::nullopt;
  return it->second;
}

std::vector<BucketEntry> LocalDirectory::Overlapping(const PointRange& range) const {
  std::vector<BucketEntry> result;
  if (range.empty()) return result;
  auto it = by_begin_.upper_bound(range.begin());
  if (it != by_begin_.begin()) --it;
  for (; it != by_begin_.end(); ++it) {
    if (!range.end_is_max() && it->first >= range.end()) break;
    if (it->second.range.Overlaps(range)) result.push_back(it->second);
  }
  return result;
}

std::vector<BucketEntry> LocalDirectory::List() const {
  std::vector<BucketEntry> result;
  result.reserve(by_begin_.size());
  for (const auto& [begin, entry] : by_begin_) result.push_back(entry);
  return result;
}

Status LocalDirectory::CheckInvariants() const {
  if (by_begin_.size() != begin_of_.size()) return InternalError("directory: index size mismatch");
  const BucketEntry* previous = nullptr;
  for (const auto& [begin, entry] : by_begin_) {
    if (entry.range.empty() || entry.range.begin() != begin) {
      return InternalError(fmt::format("directory: bad entry {}", entry.DebugString()));
    }
    auto it = begin_of_.find(entry.id);
    if (it == begin_of_.end() || it->second != begin) {
      return InternalError(fmt::format("directory: id index wrong for {}", entry.DebugString()));
    }
    if (previous != nullptr && previous->range.Overlaps(entry.range)) {
      return InternalError(
          fmt::format("directory: {} overlaps {}", previous->DebugString(), entry.DebugString()));
    }
    previous = &entry;
  }
  return OkStatus();
}

std::string LocalDirectory::DebugString() const {
  std::string out = "directory{";
  for (const auto& [begin, entry] : by_begin_) {
    if (out.size() > 10) out += ", ";
    out += entry.DebugString();
  }
  return out + "}";
}

}  // namespace shoal::storage
