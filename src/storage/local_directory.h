#pragma once

// LocalDirectory: the buckets this node holds, with their ranges and states (paper 004 §3-§4's
// local directory). A value type: BucketStore copies it, applies an edit to the copy, persists the
// edited entries in the same WriteBatch as any data change the edit needs, and then swaps the copy
// in. Thread-compatible.
//
// Invariants (CheckInvariants): every range is non-empty; ranges never overlap; ids are unique.
// Ranges need not cover the hash space: a node holds some buckets only.
//
// States and the transitions Shoal allows (ARCHITECTURE.md §3):
//   kReadWrite  served: reads and writes are accepted.
//   kAdding     being received: data is staged (ingest, catch-up) but nothing is served.
//   kLeaving    being moved away: still served until the move commits, then removed.
//   ReadWrite -> Leaving (move starts), Leaving -> ReadWrite (move aborted),
//   Adding -> ReadWrite (move committed); Adding and Leaving buckets leave by Remove.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "src/common/ids.h"
#include "src/common/status.h"
#include "src/storage/point_range.h"

namespace shoal::storage {

enum class BucketState : uint8_t { kReadWrite = 1, kAdding = 2, kLeaving = 3 };

[[nodiscard]] std::string_view BucketStateName(BucketState state);

struct BucketEntry {
  BucketId id{};
  PointRange range{};
  BucketState state = BucketState::kReadWrite;

  friend bool operator==(const BucketEntry&, const BucketEntry&) = default;
  [[nodiscard]] std::string DebugString() const;
};

// Persistent form: key "b" + id (4 bytes big-endian) in the meta column family; value
//   [format = 1][state][begin, 8 bytes BE][end, 8 bytes BE][flags: bit 0 end_is_max]
[[nodiscard]] std::string BucketMetaKey(BucketId id);
inline constexpr char kBucketMetaPrefix = 'b';
[[nodiscard]] std::string EncodeBucketEntry(const BucketEntry& entry);
[[nodiscard]] StatusOr<BucketEntry> DecodeBucketEntry(std::string_view meta_key,
                                                      std::string_view value);

class LocalDirectory {
 public:
  // kBucketState if the id is taken or the range overlaps a held bucket; kInvalidArgument if the
  // range is empty.
  [[nodiscard]] Status Add(const BucketEntry& entry);
  // kNotFound if absent; kBucketState for a transition not listed above. Same state: no-op.
  [[nodiscard]] Status SetState(BucketId id, BucketState state);
  // Splits a kReadWrite bucket at `at`: the bucket keeps [begin, at), `right_id` gets [at, end)
  // in the same state. Returns {left, right}.
  [[nodiscard]] StatusOr<std::pair<BucketEntry, BucketEntry>> Split(BucketId id, uint64_t at,
                                                                    BucketId right_id);
  [[nodiscard]] Status Remove(BucketId id);

  [[nodiscard]] StatusOr<BucketEntry> Get(BucketId id) const;
  // The bucket whose range contains `point`, if held.
  [[nodiscard]] std::optional<BucketEntry> Find(Point point) const;
  // Buckets that overlap `range`, in range order.
  [[nodiscard]] std::vector<BucketEntry> Overlapping(const PointRange& range) const;
  // All buckets in range order.
  [[nodiscard]] std::vector<BucketEntry> List() const;
  [[nodiscard]] size_t size() const { return by_begin_.size(); }

  [[nodiscard]] Status CheckInvariants() const;
  [[nodiscard]] std::string DebugString() const;

 private:
  std::map<uint64_t, BucketEntry> by_begin_;
  absl::flat_hash_map<BucketId, uint64_t> begin_of_;
};

}  // namespace shoal::storage
