#pragma once

// The replication position of one bucket's copy (docs/design/replication.md §3): every write a
// primary orders gets (term, rseq), where rseq numbers the bucket's writes with no gap and goes on
// across terms; the term history lists where each term began (Kafka's leader-epoch cache). A copy
// at (t, x) holds exactly the writes 1..x of the history it shares with its primary.
//
// Durable layout in the store's meta column family: "r" + bucket id (BE 4) -> term (BE 8), rseq
// (BE 8), written in the WriteBatch of the writes it counts; "h" + bucket id -> count (BE 4) then
// per term its id and first rseq (BE 8 each), written when a term starts.
//
// Value types; thread-compatible.

#include <compare>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "src/common/ids.h"
#include "src/common/status.h"
#include "src/storage/document.h"

namespace shoal::storage {

// The last write a copy applied: (0, 0) before any.
struct ReplicaPosition {
  Term term{0};
  uint64_t rseq = 0;
  friend auto operator<=>(const ReplicaPosition&, const ReplicaPosition&) = default;
  [[nodiscard]] std::string DebugString() const;
};

// Where a term began: its first write is `first_rseq`.
struct TermStart {
  Term term;
  uint64_t first_rseq = 0;
  friend bool operator==(const TermStart&, const TermStart&) = default;
};

// A bucket's copy: its position and its term history (terms strictly increasing, first rseqs
// non-decreasing, the last term at least the position's).
struct ReplicaState {
  ReplicaPosition position;
  std::vector<TermStart> history;

  // The current term (the last of the history), or 0 when no term began.
  [[nodiscard]] Term current_term() const {
    return history.empty() ? Term(0) : history.back().term;
  }
  // The term write `rseq` (1..position.rseq) was ordered in, or 0 when the history does not say.
  [[nodiscard]] Term TermOf(uint64_t rseq) const;
  [[nodiscard]] Status CheckInvariants() const;
  [[nodiscard]] std::string DebugString() const;
  friend bool operator==(const ReplicaState&, const ReplicaState&) = default;
};

// Whether a copy in state `copy` holds a prefix of the history of `primary` (§4.3): it holds at
// least one write, no more writes than the primary, and each of its writes 1..x was ordered in
// the term the primary's history gives that rseq. Stricter than "the copy's term is in the
// primary's history and x does not exceed that term's last rseq there": the earlier terms must
// match too, which the ordered stream makes true of any copy it built. A copy that fails it
// diverged (an old primary's unacknowledged tail, a backup that got more than a failover's
// winner) or holds nothing, and is rebuilt from a snapshot.
[[nodiscard]] bool IsPrefixOf(const ReplicaState& copy, const ReplicaState& primary);

// One ordered write of a bucket as a primary sends it and a backup applies it: the new state of
// each key it wrote (version, tombstone, body), all under one (term, rseq).
struct ReplicatedEntry {
  BucketId bucket;
  ReplicaPosition position;
  std::vector<Document> documents;
};

[[nodiscard]] std::string ReplicaPositionKey(BucketId bucket);
[[nodiscard]] std::string TermHistoryKey(BucketId bucket);
inline constexpr char kReplicaPositionPrefix = 'r';
inline constexpr char kTermHistoryPrefix = 'h';
// A seal (replication.md §4.2 step 2): the term of the bucket's stream this replica refuses.
[[nodiscard]] std::string SealKey(BucketId bucket);
inline constexpr char kSealPrefix = 's';
[[nodiscard]] std::string EncodeReplicaPosition(const ReplicaPosition& position);
[[nodiscard]] StatusOr<ReplicaPosition> DecodeReplicaPosition(std::string_view bytes);
[[nodiscard]] std::string EncodeTermHistory(const std::vector<TermStart>& history);
[[nodiscard]] StatusOr<std::vector<TermStart>> DecodeTermHistory(std::string_view bytes);

}  // namespace shoal::storage
