#include "src/storage/mutation.h"

#include <fmt/format.h>

#include "src/storage/errors.h"

namespace shoal::storage {
namespace {

Status KeyError(ErrorReason reason, const Mutation& m, std::string_view what) {
  return StorageError(reason, fmt::format("{} {} pk={:?}: {}", MutationKindName(m.kind),
                                          m.collection.DebugString(), m.primary_key, what));
}

}  // namespace

std::string_view MutationKindName(MutationKind kind) {
  switch (kind) {
    case MutationKind::kInsert:
      return "insert";
    case MutationKind::kUpdate:
      return "update";
    case MutationKind::kUpsert:
      return "upsert";
    case MutationKind::kDelete:
      return "delete";
    case MutationKind::kUpdateIf:
      return "update-if";
    case MutationKind::kUpsertIf:
      return "upsert-if";
    case MutationKind::kCompareAndSet:
      return "compare-and-set";
    case MutationKind::kApplyIfNewer:
      return "apply-if-newer";
  }
  return "?";
}

bool Mutation::WritesTombstone() const {
  switch (kind) {
    case MutationKind::kInsert:
    case MutationKind::kUpdate:
    case MutationKind::kUpsert:
      return false;
    case MutationKind::kDelete:
      return true;
    case MutationKind::kUpdateIf:
    case MutationKind::kUpsertIf:
    case MutationKind::kCompareAndSet:
    case MutationKind::kApplyIfNewer:
      return tombstone;
  }
  return false;
}

StatusOr<bool> ConditionHolds(const Condition& condition, const StoredState& stored,
                              FilterEvaluator* evaluator) {
  if (condition.tombstone.has_value() && *condition.tombstone != stored.tombstone) return false;
  if (condition.version_op.has_value()) {
    const int cmp = stored.version < condition.version_operand
                        ? -1
                        : (stored.version > condition.version_operand ? 1 : 0);
    if (!Satisfies(*condition.version_op, cmp)) return false;
  }
  if (!condition.fields.empty()) {
    if (stored.tombstone) return false;
    if (evaluator == nullptr) return InternalError("condition on fields without an evaluator");
    return evaluator->Matches(stored.body);
  }
  return true;
}

StatusOr<Decision> Decide(const Mutation& m, const std::optional<StoredState>& stored,
                          FilterEvaluator* evaluator) {
  const bool live = stored.has_value() && !stored->tombstone;
  switch (m.kind) {
    case MutationKind::kInsert:
      if (live) return KeyError(ErrorReason::kDuplicate, m, "a live document exists");
      return Decision::kWrite;
    case MutationKind::kUpdate:
    case MutationKind::kDelete:
      if (!live) return KeyError(ErrorReason::kNotFound, m, "no live document");
      return Decision::kWrite;
    case MutationKind::kUpsert:
      return Decision::kWrite;
    case MutationKind::kUpdateIf: {
      if (!stored.has_value()) return KeyError(ErrorReason::kNotFound, m, "nothing stored");
      SHOAL_ASSIGN_OR_RETURN(bool holds, ConditionHolds(m.condition, *stored, evaluator));
      if (!holds) return KeyError(ErrorReason::kConditionFailed, m, "condition does not hold");
      return Decision::kWrite;
    }
    case MutationKind::kUpsertIf: {
      if (!stored.has_value()) return Decision::kWrite;
      SHOAL_ASSIGN_OR_RETURN(bool holds, ConditionHolds(m.condition, *stored, evaluator));
      if (!holds) {
        return KeyError(ErrorReason::kDuplicate, m, "stored document does not match the predicate");
      }
      return Decision::kWrite;
    }
    case MutationKind::kCompareAndSet: {
      const uint64_t current = stored.has_value() ? stored->version : 0;
      if (current == m.version) return Decision::kWrite;
      if (!stored.has_value()) return KeyError(ErrorReason::kNotFound, m, "nothing stored");
      return KeyError(ErrorReason::kConditionFailed, m,
                      fmt::format("stored version {} is not {}", current, m.version));
    }
    case MutationKind::kApplyIfNewer:
      if (stored.has_value() && stored->version >= m.version) return Decision::kSkip;
      return Decision::kWrite;
  }
  return InternalError("unknown mutation kind");
}

}  // namespace shoal::storage
