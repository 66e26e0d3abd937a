#pragma once

// Custom fold functions for sharded fields (paper 003 §3 @ShardFold; docs/design/hotspot.md), on
// JSON text: a fold's operands and its result are each one JSON value, as text.
//
//   shoal::RegisterFoldText(
//       "longest", R"("")",
//       [](std::string_view a, std::string_view b) -> shoal::StatusOr<std::string> {
//         return std::string(a.size() >= b.size() ? a : b);
//       },
//       {R"("a")", R"("bb")", R"("")"});
//   collection.Declare(R"({"best": {"fold": "longest", "shards": 4}})");
//
// A fold must be commutative and associative with `neutral` as its identity: shards are folded
// in any order, and a shard's value may be folded into the base long after it was written.
// RegisterFoldText checks the laws on every pair and triple of `samples` (2 to 16 JSON values) and
// refuses a fold that breaks one (kInvalidArgument). Names are process-wide; built-ins: sum,
// min, max, count, bit_or, set_union. Register before opening collections that use the fold.
// include/shoal/hotspot_json.h has the same calls on nlohmann::json values (RegisterFold,
// FoldValues, LiftOperand, NeutralOf), for programs that use that library.
//
// Thread-safety: every function is thread-safe.

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "include/shoal/status.h"

namespace shoal {

// Combines two JSON values into one; kInvalidArgument (or any error) refuses the pair.
using FoldTextFunction =
    std::function<StatusOr<std::string>(std::string_view a, std::string_view b)>;

[[nodiscard]] Status RegisterFoldText(std::string_view name, std::string_view neutral,
                                      FoldTextFunction combine,
                                      const std::vector<std::string>& samples);

// Folds two values with the named fold (built-in or registered): what reads do across shards.
[[nodiscard]] StatusOr<std::string> FoldValuesText(std::string_view fold, std::string_view a,
                                                   std::string_view b);
// The value an update with `operand` contributes (count: 1; the others: the operand, checked).
[[nodiscard]] StatusOr<std::string> LiftOperandText(std::string_view fold,
                                                    std::string_view operand);
// The fold's own neutral element.
[[nodiscard]] StatusOr<std::string> NeutralOfText(std::string_view fold);

}  // namespace shoal
