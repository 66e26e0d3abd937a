#pragma once

// Predicates on document fields, for scans and conditional operations.
//
// A FieldPredicate compares the value at a dotted path ("a", "a.b.c": object members only; a key
// that contains '.' or JSON escapes cannot be addressed) with a constant. A DocumentFilter is the
// conjunction of its predicates; the empty filter matches every document, a non-empty one never
// matches a tombstone. Comparison rules:
//   - numbers compare numerically (integers exactly, otherwise as doubles);
//   - strings compare bytewise (after JSON unescaping);
//   - booleans and null support kEq and kNe only (false < true is not defined);
//   - a missing field, or a field of another type, fails every operator except kNe, which is
//     true when the field exists with a different value of any type.
//
// FilterEvaluator is not thread-safe (it owns a parser and a buffer); use one per scan.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "src/common/status.h"

namespace shoal::storage {

enum class CompareOp : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe };

[[nodiscard]] std::string_view CompareOpName(CompareOp op);
// True iff `cmp` (<0, 0, >0: left against right) satisfies `op`.
[[nodiscard]] bool Satisfies(CompareOp op, int cmp);

using FieldValue = std::variant<std::nullptr_t, bool, int64_t, double, std::string>;

struct FieldPredicate {
  std::string path{};
  CompareOp op = CompareOp::kEq;
  FieldValue value{};
};

struct DocumentFilter {
  std::vector<FieldPredicate> all_of{};

  [[nodiscard]] bool empty() const { return all_of.empty(); }
};

// InvalidArgument for an empty path or an empty path segment, or an ordering operator applied to
// null or a boolean.
[[nodiscard]] Status ValidateFilter(const DocumentFilter& filter);

class FilterEvaluator {
 public:
  // `filter` must have passed ValidateFilter and must outlive the evaluator.
  explicit FilterEvaluator(const DocumentFilter& filter);
  ~FilterEvaluator();
  FilterEvaluator(const FilterEvaluator&) = delete;
  FilterEvaluator& operator=(const FilterEvaluator&) = delete;

  // Whether a live document's `body` (a validated JSON object) matches. kCorruption if the body
  // does not parse.
  [[nodiscard]] StatusOr<bool> Matches(std::string_view body);

 private:
  struct State;
  const DocumentFilter& filter_;
  std::vector<std::vector<std::string>> paths_;  // split at '.', per predicate
  std::unique_ptr<State> state_;
};

}  // namespace shoal::storage
