#pragma once

// The single-document mutations of BucketStore and the pure rule that decides each one
// (paper 000 §5). Deciding is separated from applying so the rules are tested without an engine.
//
// For a key, the stored state is one of: nothing stored, a live document, a tombstone. Every
// mutation that writes stamps a fresh store-wide version, except kApplyIfNewer, which writes the
// version it carries (moves and replication).
//
//   kind            nothing stored        live                    tombstone
//   kInsert         write                 DUPLICATE               write
//   kUpdate         NOT_FOUND             write                   NOT_FOUND
//   kUpsert         write                 write                   write
//   kDelete         NOT_FOUND             write tombstone         NOT_FOUND
//   kUpdateIf       NOT_FOUND             write if cond, else CONDITION_FAILED (both states)
//   kUpsertIf       write                 write if cond, else DUPLICATE (both states; 000 §5:
//                                         S ∪q d inserts when d ∉ S(q), which fails if d ∈ S)
//   kCompareAndSet  write iff expected    write iff stored version == expected, else
//                   version is 0, else    CONDITION_FAILED (both states)
//                   NOT_FOUND
//   kApplyIfNewer   write                 write iff carried version > stored version, else skip
//
// kUpdateIf, kUpsertIf, kCompareAndSet and kApplyIfNewer may write a tombstone (`tombstone`),
// which is how paper 000 §6.3 deletes across shards.

#include <cstdint>
#include <optional>
#include <string_view>

#include "src/common/ids.h"
#include "src/common/status.h"
#include "src/storage/predicate.h"

namespace shoal::storage {

// A predicate on a stored document (live or tombstone): its tombstone flag, its version, and the
// fields of its body. Unset parts always hold.
struct Condition {
  std::optional<bool> tombstone{};
  std::optional<CompareOp> version_op{};  // stored version <op> version_operand
  uint64_t version_operand = 0;
  DocumentFilter fields{};  // evaluated on the stored body; never holds for a tombstone if set

  [[nodiscard]] static Condition IsTombstone() { return Condition{.tombstone = true}; }
  [[nodiscard]] static Condition IsLive() { return Condition{.tombstone = false}; }
  [[nodiscard]] static Condition VersionIs(uint64_t v) {
    return Condition{.version_op = CompareOp::kEq, .version_operand = v};
  }
};

enum class MutationKind : uint8_t {
  kInsert,
  kUpdate,
  kUpsert,
  kDelete,
  kUpdateIf,
  kUpsertIf,
  kCompareAndSet,
  kApplyIfNewer,
};

[[nodiscard]] std::string_view MutationKindName(MutationKind kind);

// One mutation. The views must stay valid for the duration of the call that takes it.
struct Mutation {
  MutationKind kind = MutationKind::kUpsert;
  CollectionId collection{};
  std::string_view primary_key{};
  std::string_view body{};  // ignored when the mutation writes a tombstone
  bool tombstone =
      false;              // write a tombstone (kUpdateIf, kUpsertIf, kCompareAndSet, kApplyIfNewer)
  Condition condition{};  // kUpdateIf, kUpsertIf
  uint64_t version = 0;   // kCompareAndSet: expected; kApplyIfNewer: the version to write

  [[nodiscard]] bool WritesTombstone() const;
};

struct MutationResult {
  uint64_t version = 0;  // of the document now stored
  bool applied = true;   // false only when kApplyIfNewer found a newer or equal local version
};

// The stored state of one key, as the decision sees it.
struct StoredState {
  uint64_t version = 0;
  bool tombstone = false;
  std::string_view body{};
};

enum class Decision : uint8_t { kWrite, kSkip };

// Decides `mutation` against `stored` (nullopt: nothing stored). Returns kWrite, kSkip (only for
// kApplyIfNewer), or the error of the table above. `evaluator` evaluates condition.fields and may
// be null when that filter is empty.
[[nodiscard]] StatusOr<Decision> Decide(const Mutation& mutation,
                                        const std::optional<StoredState>& stored,
                                        FilterEvaluator* evaluator);

// Whether `stored` satisfies `condition` (see Condition).
[[nodiscard]] StatusOr<bool> ConditionHolds(const Condition& condition, const StoredState& stored,
                                            FilterEvaluator* evaluator);

}  // namespace shoal::storage
