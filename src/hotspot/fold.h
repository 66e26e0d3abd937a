#pragma once

// Fold functions of sharded fields (paper 003 §2.1, §3 @ShardFold).
//
// A sharded field's value is spread over shard documents ("cells"); the field's value is the
// fold of the cells' values. A fold is a binary function `Combine` that MUST be commutative and
// associative, with a neutral element: cells are folded in whatever order reads find them, and
// a cell absorbed into the field's base is folded earlier than it was written. An update carries
// an operand that `Lift` turns into a value first (for "count" any operand lifts to 1; for the
// others the operand is a value).
//
// Built-in folds:
//   sum        numbers; integers stay integers (int64, overflow is an error), else doubles
//   min, max   numbers; null is the neutral element ("no value yet")
//   count      lifts any operand to 1, then sums
//   bit_or     unsigned 64-bit integers, bitwise or
//   set_union  arrays as sets (sorted, unique); a non-array operand lifts to a one-element set
//
// Custom folds are registered by name from C++ with sample values; registration checks the
// laws on every pair and triple of samples and refuses a fold that breaks one.
//
// Thread-safety: Fold is immutable; FoldRegistry is thread-safe.

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "src/common/status.h"

namespace shoal::hotspot {

using Value = nlohmann::json;

// Limits of sample checks at registration (pairs and triples of samples are enumerated).
inline constexpr size_t kMaxFoldSamples = 16;

class Fold {
 public:
  using CombineFn = std::function<StatusOr<Value>(const Value&, const Value&)>;
  using LiftFn = std::function<StatusOr<Value>(const Value&)>;

  // `lift` may be empty: the operand is then the value, checked by combining it with neutral.
  Fold(std::string name, Value neutral, CombineFn combine, LiftFn lift = {});

  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] const Value& neutral() const { return neutral_; }
  [[nodiscard]] StatusOr<Value> Combine(const Value& a, const Value& b) const;
  // The value an update with `operand` folds into one cell; kInvalidArgument if the operand
  // does not fit the fold.
  [[nodiscard]] StatusOr<Value> Lift(const Value& operand) const;

 private:
  std::string name_;
  Value neutral_;
  CombineFn combine_;
  LiftFn lift_;
};

using FoldPtr = std::shared_ptr<const Fold>;

// Checks commutativity, associativity and that `neutral` is an identity on `samples`
// (lifted first). OK, or kInvalidArgument naming the law and the values that break it.
[[nodiscard]] Status CheckFoldLaws(const Fold& fold, const Value& neutral,
                                   const std::vector<Value>& samples);

class FoldRegistry {
 public:
  // The process-wide registry, with the built-in folds.
  [[nodiscard]] static FoldRegistry& Global();

  // Registers `fold` after CheckFoldLaws on 2..kMaxFoldSamples samples (operands). An existing
  // name is kAlreadyExists; the names of the built-ins are taken.
  [[nodiscard]] Status Register(FoldPtr fold, const std::vector<Value>& samples);
  [[nodiscard]] StatusOr<FoldPtr> Find(std::string_view name) const;

 private:
  FoldRegistry();
  mutable std::mutex mu_;
  std::map<std::string, FoldPtr, std::less<>> folds_;
};

}  // namespace shoal::hotspot
